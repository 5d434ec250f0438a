// natsched is an ES module package (it uses top-level await and ES module workers). A
// `require("natsched")` lands here and fails with a clear error instead of
// ERR_PACKAGE_PATH_NOT_EXPORTED.
const error = new Error(
  'natsched is an ES module: use `import { LocalCluster } from "natsched"`, or from CommonJS `const { LocalCluster } = await import("natsched")`.',
);
error.code = "ERR_NATSCHED_ESM_ONLY";
throw error;
