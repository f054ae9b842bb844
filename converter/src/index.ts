import { WorkerEntrypoint } from "cloudflare:workers";
import type {
  AvifJob,
  AvifOutcome,
  ConverterService,
  ConvertJob,
  ConvertOutcome,
  WidthJob,
  WidthOutcome,
} from "../../src/converter/contract";
import { convertStill, describeWebp, makeAvif, makeWidth } from "./jobs";

/**
 * The converter Worker: the RPC entrypoint the API Worker's `CONVERTER` binding names. Each call runs on an
 * isolate of its own Worker, so the API's isolates never spend a conversion's CPU or memory.
 */
export class Converter extends WorkerEntrypoint<ConverterEnv> implements ConverterService {
  convert(job: ConvertJob): Promise<ConvertOutcome> {
    return convertStill(job);
  }

  makeWidth(job: WidthJob): Promise<WidthOutcome> {
    return makeWidth(job);
  }

  makeAvif(job: AvifJob): Promise<AvifOutcome> {
    return makeAvif(job);
  }

  async describe(head: Uint8Array): Promise<{ width: number; height: number; animated: boolean } | null> {
    return describeWebp(head);
  }
}

/** No HTTP surface: the converter is reached only through the API's service binding. */
export default class extends WorkerEntrypoint<ConverterEnv> {
  override fetch(): Response {
    return Response.json(
      { message: "The converter answers only the API Worker's service binding (RPC); it has no HTTP routes." },
      { status: 404 },
    );
  }
}
