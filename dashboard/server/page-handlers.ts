/** The page itself: its HTML, its one script and its stylesheet. */
import type { Handler } from "./route-types.js";

export const pageHandler: Handler = ({ page }) => ({ status: 200, type: "text/html; charset=utf-8", body: page.html });
export const scriptHandler: Handler = ({ page }) => ({ status: 200, type: "text/javascript; charset=utf-8", body: page.script });
export const styleHandler: Handler = ({ page }) => ({ status: 200, type: "text/css; charset=utf-8", body: page.css });
