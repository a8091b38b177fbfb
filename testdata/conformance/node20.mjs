// Loaded with `node --import` by interop/conformance_test.go when node is
// older than 22: the pinned conformance suite imports fs.globSync (Node.js
// 22), which it calls only in its tier-check command, so on Node.js 20 it
// would not start at all. This registers node20-hooks.mjs, which gives the
// suite's imports of "fs" a module that adds a globSync that throws.
import { register } from "node:module";

register(new URL("./node20-hooks.mjs", import.meta.url));
