import { checkModels } from "./model.js";
for (const r of await checkModels()) console.log(JSON.stringify({ ...r, edges: r.edges.length, covered: r.covered.length, definition: r.definition.length, definitionCovered: r.definitionCovered.length }));
