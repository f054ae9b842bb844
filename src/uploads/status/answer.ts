import type { UploadStatusData } from "../coordinator/store-coordinator";
import { partEtag } from "../parts-state";
import { type PublishedFile, publishedFile } from "../srcset";
import { publicState } from "../upload-state";

/** `GET /media-uploads/{id}`'s answer: the upload's public state and result, and a multipart upload's plan and parts. */
type UploadStatusAnswer = {
  id: string;
  state: ReturnType<typeof publicState>;
  expires_at: string;
  result: PublishedFile | null;
  multipart?: { part_size: number; part_count: number; part_url: string };
  parts?: { part_number: number; size: number; etag: string }[];
};

/**
 * The answer of the upload's state as the coordinator holds it. Every part stored is every byte stored,
 * whether or not a complete has assembled them yet: such an upload is `stored`. `widths()` (`IMAGE_WIDTHS`,
 * read only for a result) make a converted image's `srcset`; `partUrl` is where its parts go.
 */
export function uploadStatusAnswer(
  data: UploadStatusData,
  widths: () => number[],
  partUrl: string,
): UploadStatusAnswer {
  const { upload, parts } = data;
  const plan = upload.multipart;
  const allStored = plan !== null && upload.state === "reserved" && parts?.length === plan.partCount;
  const single = {
    id: upload.id,
    state: allStored ? "stored" : publicState(upload.state),
    expires_at: new Date(upload.expiresAt).toISOString(),
    result: upload.result && publishedFile(upload.result, widths()),
  };
  if (!plan || !parts) return single;
  return {
    ...single,
    multipart: { part_size: plan.partSize, part_count: plan.partCount, part_url: partUrl },
    parts: parts.map((part) => ({ part_number: part.partNumber, size: part.size, etag: partEtag(part.etag) })),
  };
}
