// Module hooks (see node20.mjs): "fs" and "node:fs", imported from anywhere
// but this shim, resolve to a module that is node:fs plus a globSync that
// throws (the suite calls it only in tier-check, which the tests never run).
const shim = "mcphost-node20:fs";

export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url === shim) {
    return {
      format: "module",
      shortCircuit: true,
      source: `import fs from "node:fs";
export * from "node:fs";
export default fs;
export const globSync = fs.globSync ?? function globSync() { throw new Error("fs.globSync needs Node.js 22"); };
`,
    };
  }
  return next(url, context);
}
