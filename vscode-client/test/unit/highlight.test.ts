import { test } from "node:test";
import assert from "node:assert/strict";
import { highlightCode } from "../../src/webview/highlight";

test("a fence in a known language is highlighted with highlight.js classes", () => {
  const html = highlightCode("def add(a, b):\n    return a + b  # sum\n", "python");
  assert.ok(html);
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
  assert.match(html, /<span class="hljs-comment"># sum<\/span>/);
  assert.match(highlightCode('{"a": 1}', "JSON") ?? "", /hljs-attr/, "the language name is case-insensitive");
  assert.match(highlightCode("x=1", "bash {.line-numbers}") ?? "", /x=/, "only the first word of the info string names the language");
});

test("an unknown or missing language stays plain (the caller escapes it)", () => {
  assert.equal(highlightCode("anything", ""), undefined);
  assert.equal(highlightCode("anything", "klingon"), undefined);
});

test("code is escaped: markup in a code block never becomes markup", () => {
  const html = highlightCode('const s = "<img src=x onerror=alert(1)>";', "javascript") ?? "";
  assert.doesNotMatch(html, /<img/);
  assert.match(html, /&lt;img/);
});
