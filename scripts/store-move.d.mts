// Types of store-move.mjs for the TypeScript tests that import it.
export type MoveOptions =
  | { help: false; recover: false; storeId: string; to: string; url: string; secret: string | undefined }
  | { help: false; recover: true; storeId: string; url: string; secret: string | undefined };
export declare const usage: string;
export declare function parseMoveArgs(
  argv: string[],
  environment?: Record<string, string | undefined>,
): MoveOptions | { help: true };
export declare function moveStore(options: MoveOptions, fetcher?: typeof fetch): Promise<Record<string, unknown>>;
export declare function main(argv: string[]): Promise<void>;
