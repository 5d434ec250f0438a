import { parseArgs, type ParseArgsConfig } from "node:util";
import { BadOptionError } from "../machines/errors.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** node:util parseArgs, with its errors (unknown flag, missing value) as BadOptionError. */
export function parseFlags<O extends Options>(
  args: string[],
  options: O,
  allowPositionals = false,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: boolean }>> {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals });
  } catch (error) {
    throw new BadOptionError("arguments", (error as Error).message);
  }
}
