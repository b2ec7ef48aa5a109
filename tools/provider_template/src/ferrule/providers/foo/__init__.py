"""ferrule's provider for the Foo API (the template every provider package starts from).

```python
from ferrule.providers.foo import FooModel, FooProvider

model = FooModel("foo-1", provider=FooProvider())  # key from FOO_API_KEY
```

`import ferrule.providers.foo` is cheap: names load on first use. The wire codec is the public
module `ferrule.providers.foo.codec`, the profiles are in `ferrule.providers.foo.profiles`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ferrule.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from ._model import FooModel
    from ._provider import FooProvider
    from .codec import FooCodec
    from .profiles import foo_profile

__version__ = "0.1.0"

__all__ = ["FooCodec", "FooModel", "FooProvider", "__version__", "foo_profile"]

__getattr__ = lazy_getattr(
    __name__,
    {"FooModel": "_model", "FooProvider": "_provider", "FooCodec": "codec", "foo_profile": "profiles"},
)
