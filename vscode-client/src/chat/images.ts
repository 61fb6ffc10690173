/**
 * Attached images on the client side: the type told by the first bytes (as the server
 * does, so a renamed file is caught here, not after a round trip), the size checked
 * against the server's limit, and the label the composer and transcript show.
 * No `vscode` import: the host, the webview and the unit tests share it.
 */
import { IMAGE_MIME_TYPES, MAX_IMAGE_BYTES, type ShownImage, type PromptImage } from "../protocol/types";

export function sniffImage(b: Uint8Array): string | undefined {
  const starts = (...xs: number[]) => xs.every((x, i) => b[i] === x);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return "image/webp";
  return undefined;
}

/** Base64 of bytes, in chunks (a spread of megabytes would overflow the call stack). */
export function toBase64(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The image for a file's bytes, or a sentence saying why it cannot be attached. */
export function imageOfBytes(bytes: Uint8Array, name: string): PromptImage | string {
  const mimeType = sniffImage(bytes);
  if (!mimeType || !IMAGE_MIME_TYPES.includes(mimeType)) return `${name} is not a PNG, JPEG, GIF or WebP image.`;
  if (bytes.length > MAX_IMAGE_BYTES) return `${name} is ${(bytes.length / 1048576).toFixed(1)} MB; the limit is 5 MB.`;
  return { mimeType, data: toBase64(bytes), name };
}

export function imageLabel(i: Pick<ShownImage, "name" | "mimeType">): string {
  return `[image: ${i.name || i.mimeType}]`;
}

/** A `data:` URL for an inline image (the webview's CSP allows `img-src data:`), else undefined. */
export function imageSrc(i: { mimeType: string; data?: string }): string | undefined {
  return i.data && IMAGE_MIME_TYPES.includes(i.mimeType) ? `data:${i.mimeType};base64,${i.data}` : undefined;
}

/** How crank/image names a blob: 64 lowercase hex digits (the server refuses anything else). */
export function isSha256(v: unknown): v is string {
  return typeof v === "string" && /^[0-9a-f]{64}$/.test(v);
}

function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1048576).toFixed(1)} MB`;
}

/**
 * The line under a shown image: its name, type and size (and its shape when the server
 * measured it), e.g. `chart.png · PNG · 12.4 KB · 64×64`. A size the block does not
 * carry is told from the inline data's length.
 */
export function imageCaption(i: Pick<ShownImage, "name" | "mimeType" | "bytes" | "width" | "height" | "data">): string {
  const parts: string[] = [];
  if (i.name) parts.push(i.name);
  parts.push(i.mimeType.replace(/^image\//, "").toUpperCase());
  const bytes = typeof i.bytes === "number" ? i.bytes : i.data ? Math.floor((i.data.length * 3) / 4) - (i.data.endsWith("==") ? 2 : i.data.endsWith("=") ? 1 : 0) : undefined;
  if (bytes !== undefined) parts.push(humanBytes(bytes));
  if (i.width && i.height) parts.push(`${i.width}×${i.height}`);
  return parts.join(" · ");
}

/** What crank/image answered for one blob: its bytes, or why it cannot be shown. */
export type FetchedImage = { mimeType: string; data: string } | { error: string };

/**
 * The stored images (a `sha256` and no `data`) of one session view, fetched through the
 * host's crank/image only when shown and then kept by hash. The server serves a blob only
 * to a session whose log refers to it, so a view of another session starts empty; an
 * error is kept until the transcript is read again (a restarted server may answer).
 */
export class ImageCache {
  private sessionId: string | undefined;
  private readonly got = new Map<string, FetchedImage>();
  private readonly asked = new Set<string>();

  /** The view now shows `sessionId`: another session's answers are dropped. */
  forSession(sessionId: string | undefined): void {
    if (sessionId === this.sessionId) return;
    this.sessionId = sessionId;
    this.got.clear();
    this.asked.clear();
  }

  /** The transcript was read again: errors may be answered differently now. */
  forgetErrors(): void {
    for (const [sha, v] of this.got) if ("error" in v) this.got.delete(sha);
    this.asked.clear();
  }

  /** What is known about a stored image; undefined while it has not arrived. */
  get(sha256: string): FetchedImage | undefined {
    return this.got.get(sha256);
  }

  /** True once per hash not yet known: the caller asks the host for it, once. */
  need(sha256: string): boolean {
    if (this.got.has(sha256) || this.asked.has(sha256)) return false;
    this.asked.add(sha256);
    return true;
  }

  /** The host's answer; false (and ignored) when it is for another session than the one shown. */
  put(sessionId: string | undefined, sha256: string, answer: FetchedImage): boolean {
    if (sessionId !== this.sessionId) return false;
    this.asked.delete(sha256);
    this.got.set(sha256, answer);
    return true;
  }
}

/**
 * What a thumbnail shows for an image: a `data:` URL (inline, or fetched), an error to
 * say with its name, or nothing yet (a stored image still on its way; `fetch` is true
 * the first time, when the caller must ask for it).
 */
export function imageView(i: ShownImage, cache: ImageCache): { src: string; fetched: boolean } | { error: string } | { pending: true; fetch: boolean } {
  const inline = imageSrc(i);
  if (inline) return { src: inline, fetched: false };
  if (i.restored && !isSha256(i.sha256)) return { pending: true, fetch: false }; // until the transcript is read again
  if (!isSha256(i.sha256)) return { error: "the image was not stored with the session" };
  const got = cache.get(i.sha256);
  if (!got) return { pending: true, fetch: cache.need(i.sha256) };
  if ("error" in got) return { error: got.error };
  const src = imageSrc(got);
  return src ? { src, fetched: true } : { error: `the server sent ${got.mimeType}, not an image the chat shows` };
}
