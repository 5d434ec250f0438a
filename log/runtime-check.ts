/**
 * natsched needs Node >= 20.15 (`zlib.crc32`, which checks every log record). Imported first by
 * the package's entry points, so an older Node fails at once with a clear message rather than
 * on the first log write.
 */
import * as zlib from "node:zlib";

if (typeof (zlib as { crc32?: unknown }).crc32 !== "function") {
  throw new Error(`natsched needs Node.js >= 20.15 (zlib.crc32); this is ${process.version}`);
}
