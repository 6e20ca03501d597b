// Shrinks the dashboard's wasm files in place, each exactly as `wasm-opt -Oz` of the same binaryen
// release would (byte for byte; xtask's tests compare the two), but all of them in one node
// process. The bundle is a main module and a chunk for every lazily loaded page, 150 files or
// so: started once per file, the wasm-opt of binaryen's npm package (binaryen compiled to wasm,
// run by node) spent most of its time loading itself and running unoptimised code, about five
// times the CPU this takes.
//
// usage: node shrink-wasm.mjs <binaryen's index.js> <file.wasm>...
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [binaryenPath, ...files] = process.argv.slice(2);
if (!binaryenPath || files.length === 0) {
  console.error("usage: node shrink-wasm.mjs <binaryen's index.js> <file.wasm>...");
  process.exit(2);
}
const { default: binaryen } = await import(pathToFileURL(binaryenPath).href);

// What `-Oz` sets: optimise level 2, shrink level 2, and the Stack IR passes wasm-opt runs
// before it writes a module.
binaryen.setOptimizeLevel(2);
binaryen.setShrinkLevel(2);
binaryen.setGenerateStackIR(true);
binaryen.setOptimizeStackIR(true);

for (const file of files) {
  // Written beside it, then renamed over it: a file is never left half written.
  const partial = `${file}.shrinking`;
  let module;
  try {
    module = binaryen.readBinary(readFileSync(file));
    if (!module.validate()) {
      throw new Error('binaryen found it invalid');
    }
    module.optimize();
    writeFileSync(partial, module.emitBinary());
    renameSync(partial, file);
  } catch (err) {
    rmSync(partial, { force: true });
    console.error(`shrink-wasm: ${file}: ${err?.message ?? err}`);
    process.exit(1);
  } finally {
    module?.dispose();
  }
}
