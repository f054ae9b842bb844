// Types of wrangler.mjs for the TypeScript tests that import it.
export type WranglerMode = "capture" | "show" | "terminal";
export type WranglerResult = {
  code: number;
  stdout: string;
  stderr: string;
  outputs: Array<Record<string, unknown>>;
};
export type RunWrangler = (
  args: string[],
  options?: { mode?: WranglerMode; env?: Record<string, string> },
) => Promise<WranglerResult>;
export declare const wranglerBin: string;
export declare const projectRoot: string;
export declare function isMain(moduleUrl: string): boolean;
export declare const runWrangler: RunWrangler;
export declare function failureMessage(result: WranglerResult): string;
export declare function failureCode(result: WranglerResult): unknown;
export declare class ScriptError extends Error {}
export declare function mustRun(
  run: RunWrangler,
  doing: string,
  args: string[],
  options?: { mode?: WranglerMode },
): Promise<WranglerResult>;
export declare function requireLogin(run: RunWrangler, command: string): Promise<unknown>;
export declare function parseJsonOutput(stdout: string): unknown;
export declare function runMain(main: (argv: string[]) => Promise<void>): void;
