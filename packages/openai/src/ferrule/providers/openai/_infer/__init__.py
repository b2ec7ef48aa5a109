"""One module per model-string prefix, each exposing `infer_model` for its entry point."""
