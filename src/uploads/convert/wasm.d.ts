// Wrangler (and the vitest pool) import `.wasm` files as compiled modules (its default CompiledWasm rule).
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
