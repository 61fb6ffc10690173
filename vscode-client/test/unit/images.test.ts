import { test } from "node:test";
import assert from "node:assert/strict";
import { parseViewMessage } from "../../src/chat/protocol";
import { ImageCache, imageCaption, imageLabel, imageOfBytes, imageSrc, imageView, isSha256, sniffImage } from "../../src/chat/images";
import { initialState, persistable, reduce, restoredState } from "../../src/chat/state";

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
  const message = { role: "user" as const, timestamp: 0, content: "look", images: [{ type: "image" as const, mimeType: "image/png", bytes: 70, name: "dot.png", data: PNG_B64 }] };
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

const SHA = "ab".repeat(32);

test("a tool result's images go on its tool card, live (message_end) and replayed (the transcript)", () => {
  const call = { role: "assistant" as const, timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [{ type: "toolCall" as const, id: "read-1", name: "read", arguments: { path: "shot.png" } }], stopReason: "toolUse" as const };
  const stored = { type: "image" as const, mimeType: "image/png", bytes: 12345, name: "shot.png", width: 64, height: 64, sha256: SHA };
  const inline = { ...stored, sha256: undefined, data: PNG_B64 };
  const result = (images: (typeof stored | typeof inline)[]) => ({ role: "toolResult" as const, timestamp: 0, toolCallId: "read-1", toolName: "read", content: "Image file shot.png, attached below.", isError: false, images });
  const ev = (seq: number, event: any) => ({ type: "event" as const, params: { workspace: "w", sessionId: "s", seq, event } });
  let s = reduce(initialState(), ev(0, { type: "message_end", message: call }));
  s = reduce(s, ev(1, { type: "tool_execution_start", toolCallId: "read-1", toolName: "read", arguments: { path: "shot.png" } }));
  s = reduce(s, ev(2, { type: "tool_execution_end", toolCallId: "read-1", result: { content: "Image file shot.png, attached below.", isError: false } }));
  const before = s.items.find((it) => it.kind === "tool");
  assert.ok(before && before.kind === "tool" && before.images === undefined);
  s = reduce(s, ev(3, { type: "message_end", message: result([inline]) }));
  const live = s.items.find((it) => it.kind === "tool");
  assert.ok(live && live.kind === "tool" && live.status === "done");
  assert.deepEqual(live.images, [inline]);
  // A tool result without images leaves the card (and its identity) alone.
  const same = reduce(s, ev(4, { type: "message_end", message: { ...result([]), images: undefined } }));
  assert.equal(same.items.find((it) => it.kind === "tool"), live);

  const replayed = reduce(initialState(), { type: "transcript", messages: [{ role: "user", timestamp: 0, content: "look" }, call, result([stored])], sessionId: "s" });
  const card = replayed.items.find((it) => it.kind === "tool");
  assert.ok(card && card.kind === "tool" && card.status === "done" && card.result?.startsWith("Image file"));
  assert.deepEqual(card.images, [stored]);
});

test("the caption says name, type, size and shape; a size missing is told from the data", () => {
  assert.equal(imageCaption({ name: "shot.png", mimeType: "image/png", bytes: 12697, width: 64, height: 48 }), "shot.png · PNG · 12.4 KB · 64×48");
  assert.equal(imageCaption({ mimeType: "image/jpeg", bytes: 3 * 1048576 }), "JPEG · 3.0 MB");
  assert.equal(imageCaption({ name: "dot.png", mimeType: "image/png", data: PNG_B64 }), `dot.png · PNG · ${PNG.length} B`);
});

test("stored images: asked once per hash, kept per session, an error said and retried after the transcript is read again", () => {
  const cache = new ImageCache();
  cache.forSession("s1");
  const stored = { type: "image" as const, mimeType: "image/png", name: "shot.png", sha256: SHA };
  assert.deepEqual(imageView({ ...stored, data: PNG_B64 }, cache), { src: `data:image/png;base64,${PNG_B64}`, fetched: false }, "inline data needs no fetch");
  assert.deepEqual(imageView(stored, cache), { pending: true, fetch: true });
  assert.deepEqual(imageView(stored, cache), { pending: true, fetch: false }, "asked once, not at every redraw");
  assert.equal(cache.put("s2", SHA, { mimeType: "image/png", data: PNG_B64 }), false, "an answer for another session is not this one's");
  assert.deepEqual(imageView(stored, cache), { pending: true, fetch: false });
  assert.equal(cache.put("s1", SHA, { mimeType: "image/png", data: PNG_B64 }), true);
  assert.deepEqual(imageView(stored, cache), { src: `data:image/png;base64,${PNG_B64}`, fetched: true });
  cache.forgetErrors();
  assert.deepEqual(imageView(stored, cache), { src: `data:image/png;base64,${PNG_B64}`, fetched: true }, "an image once fetched stays");

  const other = { ...stored, sha256: "cd".repeat(32) };
  assert.equal(imageView(other, cache).hasOwnProperty("pending"), true);
  cache.put("s1", other.sha256, { error: "no image cdcdcdcdcdcd… in session s1: the blob is missing" });
  assert.deepEqual(imageView(other, cache), { error: "no image cdcdcdcdcdcd… in session s1: the blob is missing" });
  assert.deepEqual(imageView(other, cache), { error: "no image cdcdcdcdcdcd… in session s1: the blob is missing" }, "no second ask while the transcript is the same");
  cache.forgetErrors();
  assert.deepEqual(imageView(other, cache), { pending: true, fetch: true }, "asked again once the transcript was re-read");

  cache.forSession("s2");
  assert.deepEqual(imageView(stored, cache), { pending: true, fetch: true }, "another session starts empty");
  cache.put("s2", SHA, { mimeType: "text/html", data: "PGI+" });
  assert.ok("error" in imageView(stored, cache), "an answer that is no image is an error, not a picture");
  assert.deepEqual(imageView({ type: "image", mimeType: "image/png", name: "lost.png" }, cache), { error: "the image was not stored with the session" });
});

test("the page may ask for a stored image only by a well-formed hash", () => {
  assert.deepEqual(parseViewMessage({ type: "image", sha256: SHA, sessionId: "s1" }), { type: "image", sha256: SHA, sessionId: "s1" });
  assert.deepEqual(parseViewMessage({ type: "image", sha256: SHA }), { type: "image", sha256: SHA });
  for (const sha256 of ["AB".repeat(32), "ab".repeat(31), `../${"ab".repeat(31)}`, 5, undefined])
    assert.equal(parseViewMessage({ type: "image", sha256 }), undefined, String(sha256));
  assert.equal(parseViewMessage({ type: "image", sha256: SHA, sessionId: 3 }), undefined);
  assert.equal(isSha256(SHA), true);
});

test("a draft from the page (or kept by the host) is its text and well-formed images, else refused", () => {
  const images = [{ mimeType: "image/png", data: PNG_B64, name: "dot.png" }];
  assert.deepEqual(parseViewMessage({ type: "draft", text: "half", images }), { type: "draft", text: "half", images });
  assert.deepEqual(parseViewMessage({ type: "draft", text: "", images: [] }), { type: "draft", text: "", images: [] });
  assert.deepEqual(parseViewMessage({ type: "draft", text: "half" }), { type: "draft", text: "half" }, "the text alone: the images did not change");
  assert.equal(parseViewMessage({ type: "draft", text: 3, images: [] }), undefined);
  assert.equal(parseViewMessage({ type: "draft", text: "", images: [{ mimeType: "image/svg+xml", data: "x" }] }), undefined);
});

test("a notice between a user message's start and end (images left out) does not show the message twice", () => {
  const message = { role: "user" as const, timestamp: 0, content: "look", images: [{ type: "image" as const, mimeType: "image/png", bytes: 70, name: "dot.png", data: PNG_B64 }] };
  const ev = (seq: number, event: any) => ({ type: "event" as const, params: { workspace: "w", sessionId: "s", seq, event } });
  let s = reduce(initialState(), ev(0, { type: "message_start", message }));
  s = reduce(s, { type: "notice", level: "warning", text: "loopback does not accept images" });
  s = reduce(s, ev(1, { type: "message_end", message }));
  assert.deepEqual(s.items.map((it) => it.kind), ["user", "notice"]);
  // The same words sent again after a reply are a new message.
  s = reduce(s, ev(2, { type: "message_end", message: { role: "assistant", timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [{ type: "text", text: "ok" }], stopReason: "stop" } }));
  s = reduce(s, ev(3, { type: "message_end", message }));
  assert.deepEqual(s.items.map((it) => it.kind), ["user", "notice", "assistant", "user"]);
});

test("the saved chat keeps no image bytes; a restored page shows them waiting, not broken", () => {
  let s = initialState();
  const image = { type: "image" as const, mimeType: "image/png", bytes: 69, name: "dot.png", data: PNG_B64 };
  s = reduce(s, { type: "event", params: { workspace: "w", sessionId: "s", seq: 0, event: { type: "message_start", message: { role: "user", timestamp: 0, content: "see", images: [image] } } } });
  assert.ok(JSON.stringify(s).includes(PNG_B64), "the live chat shows the bytes");
  const saved = persistable(s);
  assert.ok(!JSON.stringify(saved).includes(PNG_B64), "the saved chat has none");
  assert.ok(JSON.stringify(s).includes(PNG_B64), "and the live state is untouched");
  const restored = restoredState(JSON.parse(JSON.stringify(saved)));
  const shown = restored.items.find((it) => it.kind === "user");
  assert.ok(shown && shown.kind === "user" && shown.images);
  assert.deepEqual(imageView(shown.images[0], new ImageCache()), { pending: true, fetch: false });
  assert.equal(shown.images[0].name, "dot.png");
  const plain = reduce(initialState(), { type: "event", params: { workspace: "w", sessionId: "s", seq: 0, event: { type: "message_start", message: { role: "user", timestamp: 0, content: "hi" } } } });
  assert.equal(persistable(plain), plain, "a chat without image bytes is saved as it is");
});
