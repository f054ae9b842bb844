/**
 * Import rules of the Worker (`npm run lint`): no cycle between files, and none between the folders of src/,
 * so each folder can be read, and changed, from the ones below it; media/ reaches uploads through one face.
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
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "^src/uploads/convert/.*\\.wasm$" },
  },
};
