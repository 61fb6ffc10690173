/**
 * Attached images on the client side: the type told by the first bytes (as the server
 * does, so a renamed file is caught here, not after a round trip), the size checked
 * against the server's limit, and the label the composer and transcript show.
 * No `vscode` import: the host, the webview and the unit tests share it.
 */
import { IMAGE_MIME_TYPES, MAX_IMAGE_BYTES, type ImageBlock, type PromptImage } from "../protocol/types";

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

export function imageLabel(i: Pick<ImageBlock, "name" | "mimeType">): string {
  return `[image: ${i.name || i.mimeType}]`;
}

/** A `data:` URL for an inline image (the webview's CSP allows `img-src data:`), else undefined. */
export function imageSrc(i: { mimeType: string; data?: string }): string | undefined {
  return i.data && IMAGE_MIME_TYPES.includes(i.mimeType) ? `data:${i.mimeType};base64,${i.data}` : undefined;
}
