import { test } from "node:test";
import assert from "node:assert/strict";
import { parseViewMessage } from "../../src/chat/protocol";
import { imageLabel, imageOfBytes, imageSrc, sniffImage } from "../../src/chat/images";
import { initialState, reduce } from "../../src/chat/state";

// A real 2x2 PNG (made by Python's zlib; any decoder opens it).
const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGNgYGjQYGhgYLBp0LBpAAAPugLJHpRxBAAAAABJRU5ErkJggg==";
const PNG = Uint8Array.from(Buffer.from(PNG_B64, "base64"));

test("the type comes from the bytes, and a file that is no image is refused by name", () => {
  assert.equal(sniffImage(PNG), "image/png");
  assert.equal(sniffImage(new Uint8Array([0xff, 0xd8, 0xff, 0xe0])), "image/jpeg");
  assert.equal(sniffImage(new TextEncoder().encode("GIF89a....")), "image/gif");
  assert.equal(sniffImage(new TextEncoder().encode("hello")), undefined);
  assert.deepEqual(imageOfBytes(PNG, "dot.png"), { mimeType: "image/png", data: PNG_B64, name: "dot.png" });
  assert.equal(imageOfBytes(new TextEncoder().encode("text"), "fake.png"), "fake.png is not a PNG, JPEG, GIF or WebP image.");
  const big = new Uint8Array(5 * 1024 * 1024 + 1);
  big.set(PNG);
  assert.equal(imageOfBytes(big, "huge.png"), "huge.png is 5.0 MB; the limit is 5 MB.");
});

test("a send with images passes; images of a wrong type or shape are refused, not half-applied", () => {
  const images = [{ mimeType: "image/png", data: PNG_B64, name: "dot.png" }];
  assert.deepEqual(parseViewMessage({ type: "send", text: "see", mode: "prompt", images }), { type: "send", text: "see", mode: "prompt", images });
  assert.deepEqual(parseViewMessage({ type: "send", text: "see", mode: "prompt", images: [] }), { type: "send", text: "see", mode: "prompt" });
  for (const bad of [[{ mimeType: "image/svg+xml", data: "x" }], [{ mimeType: "image/png" }], [{ mimeType: "image/png", data: "" }], "x", [null]])
    assert.equal(parseViewMessage({ type: "send", text: "see", mode: "prompt", images: bad }), undefined, JSON.stringify(bad));
  assert.deepEqual(parseViewMessage({ type: "attachImage" }), { type: "attachImage" });
});

test("user messages keep their images; images_omitted becomes a warning notice", () => {
  const message = { role: "user" as const, content: "look", images: [{ type: "image" as const, mimeType: "image/png", name: "dot.png", data: PNG_B64 }] };
  let s = reduce(initialState(), { type: "event", params: { workspace: "w", sessionId: "s", seq: 0, event: { type: "message_start", message } } });
  const user = s.items.at(-1);
  assert.ok(user && user.kind === "user");
  assert.deepEqual(user.images, message.images);
  s = reduce(s, { type: "event", params: { workspace: "w", sessionId: "s", seq: 1, event: { type: "images_omitted", count: 1, message: "test does not accept images" } } });
  const note = s.items.at(-1);
  assert.ok(note && note.kind === "notice" && note.level === "warning" && note.text === "test does not accept images");
  assert.equal(imageLabel({ name: "big.png", mimeType: "image/png" }), "[image: big.png]");
  assert.equal(imageSrc({ mimeType: "image/png" }), undefined);
  assert.equal(imageSrc({ mimeType: "text/html", data: "PGI+" }), undefined, "only image types become data: URLs");
});
