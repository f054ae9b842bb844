// Types of corpus-grid.mjs for the TypeScript test that imports it.
export type Grid = { cols: number; rows: number; cells: number[] };
export declare function grid(rgba: ArrayLike<number>, width: number, height: number): Grid;
export declare function gridDifference(a: Grid, b: Grid): number[];
