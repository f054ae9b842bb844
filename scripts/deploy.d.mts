// Types of deploy.mjs for the TypeScript tests that import it.
import type { RunWrangler } from "./lib/wrangler.mjs";

/** The parts of wrangler's configuration the script reads. */
export type WranglerConfig = {
  name: string;
  vars: Record<string, unknown>;
  secrets?: { required?: string[] };
  d1_databases: { binding: string; database_name?: string }[];
  r2_buckets: { binding: string; bucket_name?: string }[];
  services?: { binding: string; service: string; entrypoint?: string }[];
  queues?: {
    producers?: { binding: string; queue: string }[];
    consumers?: { queue: string; dead_letter_queue?: string }[];
  };
  assets?: { directory?: string };
};
export type Dependencies = {
  run?: RunWrangler;
  print?: (text: string) => void;
  env?: Record<string, string | undefined>;
  config?: WranglerConfig;
  /** converter/wrangler.toml's configuration (read from the file when not given). */
  converterConfig?: WranglerConfig;
};
export type BundleSize = { raw_bytes: number; gzip_bytes: number };
export type SizeVerdict = { ok: boolean; problems: string[]; lines: string[] };
/** One Worker's dry-run report: `worker` names it ("API Worker (storefront-checkout-api)"). */
export type WorkerSizeReport = { worker: string; bundle: BundleSize } & SizeVerdict;

export declare const usage: string;
export declare const sizeLimits: { uncompressedBytes: number; gzipBudgetBytes: number; formerPaidGzipBytes: number };
export declare const assetLimits: { fileBytes: number; filesOnFree: number };
export declare const converterConfigPath: string;
export declare function readWranglerConfig(path?: string): Promise<WranglerConfig>;
export declare function readConverterConfig(): Promise<WranglerConfig>;
export declare function checkConverter(config: WranglerConfig, converterConfig: WranglerConfig): { name: string };
export declare function parseVarsFile(text: string, fileName?: string): [string, string][];
export declare function checkDeployVars(
  entries: [string, string][],
  config: WranglerConfig,
  fileName?: string,
): Record<string, string>;
export declare function readDeployVars(config: WranglerConfig, varsFile?: string): Promise<Record<string, string>>;
export declare function varArgs(vars: Record<string, string>): string[];
export declare function bucketNames(listOutput: string): string[];
export declare function queueNames(config: WranglerConfig): string[];
export declare function generateSecret(): string;
export declare function planSecrets(
  required: string[],
  existing: string[],
  env: Record<string, string | undefined>,
  generate?: () => string,
): { set: Record<string, string>; kept: string[]; generated: string[] };
export declare function deploy(
  options: { varsFile?: string; shards?: number },
  dependencies?: Dependencies,
): Promise<{
  url: string | undefined;
  /** The converter Worker's name (deployed before the API). */
  converter: string;
  database: { name: string; id: string; created: boolean };
  shards: { binding: string; name: string; id: string; created: boolean }[];
  bucket: { name: string; created: boolean };
  queues: { name: string; created: boolean }[];
  secrets: { set: string[]; kept: string[]; generated: string[] };
  vars: Record<string, string>;
}>;
export declare function judgeSize(
  bundle: BundleSize,
  assets: { path: string; size: number }[] | null,
  worker?: string,
): SizeVerdict;
export declare function dryRun(
  options: { varsFile?: string; outdir?: string },
  dependencies?: Dependencies,
): Promise<{ ok: boolean; converter: WorkerSizeReport; api: WorkerSizeReport }>;
export declare function parseDeployArgs(argv: string[]): {
  help: boolean;
  dryRun: boolean;
  varsFile: string | undefined;
  outdir: string | undefined;
  shards?: number;
};
export declare function main(argv: string[], dependencies?: Dependencies): Promise<void>;
