/**
 * The dashboard's routes: one line each, the handler in its own module. Read-only: GET,
 * except the what-if view's POST (it re-runs a workload on the simulator, it changes nothing).
 */
import type { RouteTable } from "./route-types.js";
import { atHandler, storyHandler, streamHandler, summaryHandler } from "./api-handlers.js";
import { machinesHandler } from "./machines-handler.js";
import { pageHandler, scriptHandler, styleHandler } from "./page-handlers.js";
import { whatIfHandler } from "./what-if-handler.js";

export const ROUTES: RouteTable = [
  { method: "GET", path: "/", handle: pageHandler },
  { method: "GET", path: "/app.js", handle: scriptHandler },
  { method: "GET", path: "/style.css", handle: styleHandler },
  { method: "GET", path: "/api/summary", handle: summaryHandler },
  { method: "GET", path: "/api/stream", handle: streamHandler },
  { method: "GET", path: "/api/at", handle: atHandler },
  { method: "GET", path: "/api/story", handle: storyHandler },
  { method: "GET", path: "/api/machines", handle: machinesHandler },
  { method: "POST", path: "/api/what-if", handle: whatIfHandler },
  // GET /api/events (server-sent events) is the server's own: it keeps the response open.
];
