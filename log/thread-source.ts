/**
 * The program a worker thread runs to load `file` (a sibling of the module at `moduleUrl`,
 * named without extension): the built `.js` directly, or from TypeScript sources (tsx,
 * vitest) the `.ts` after registering tsx's loader in the thread first.
 */
export function threadSource(moduleUrl: string, file: string): string {
  const fromSource = moduleUrl.endsWith(".ts");
  const entry = new URL(`./${file}${fromSource ? ".ts" : ".js"}`, moduleUrl).href;
  if (!fromSource) return `import(${JSON.stringify(entry)});`;
  return [
    'const { createRequire } = require("node:module");',
    'const { pathToFileURL } = require("node:url");',
    `const req = createRequire(${JSON.stringify(new URL(moduleUrl).pathname)});`,
    'import(pathToFileURL(req.resolve("tsx/esm/api")).href.replace(/\\.cjs$/, ".mjs"))',
    `  .then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`,
  ].join("\n");
}
