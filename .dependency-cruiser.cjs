/**
 * Import rules of the two Workers (`npm run lint`): no cycle between files, and none between the folders of
 * src/, so each folder can be read, and changed, from the ones below it; media/ reaches uploads through one
 * face; the API Worker (src/) imports nothing of the converter Worker (converter/), whose codecs must never be
 * in the API's bundle nor run on its isolates; the converter reaches src/ only for the contract and small
 * shared pieces.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: "no-file-cycle",
      comment: "Files import each other in a loop (a type-only import counts too): move the shared part down.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "no-folder-cycle",
      comment: "Folders of src/ import each other in a loop: one of them reaches back up.",
      severity: "error",
      scope: "folder",
      from: {},
      to: { circular: true },
    },
    {
      name: "media-through-uploads-face",
      comment:
        "media/ uses uploads only through src/uploads/for-media.ts (what is shared by both, the R2 keys and hosting in place, is in src/storage/).",
      severity: "error",
      from: { path: "^src/media/" },
      to: { path: "^src/uploads/", pathNot: "^src/uploads/for-media\\.ts$" },
    },
    {
      name: "api-without-converter",
      comment:
        "The API Worker (src/) imports the converter Worker's code (converter/): call it through the CONVERTER binding (src/converter/client.ts) instead; what both share is in src/converter/contract.ts.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^converter/" },
    },
    {
      name: "converter-takes-little-of-the-api",
      comment:
        "The converter Worker (converter/) imports API code beyond the contract and src/lib/: keep it a Worker of its own that knows nothing of routes, D1 or the coordinator.",
      severity: "error",
      from: { path: "^converter/src/" },
      to: { path: "^src/", pathNot: "^src/(converter/contract|lib/[^/]+)\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "^converter/src/convert/.*\\.wasm$" },
  },
};
