// Preloaded (`node --import`) into the MCP servers the tests run over HTTP: a server that listens on
// a port without naming a host (as server-everything does) is bound to 127.0.0.1 instead of every
// interface, so the tests never open a port beyond loopback.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const isPort = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (isPort && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
