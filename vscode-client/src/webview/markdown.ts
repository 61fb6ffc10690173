/**
 * Markdown to sanitized DOM. markdown-it renders with raw HTML disabled and DOMPurify
 * cleans the result anyway (links and images from a model are untrusted input). Code
 * blocks with a known language are highlighted (./highlight) and get a copy button.
 */
import MarkdownIt from "markdown-it";
import DOMPurify from "dompurify";
import { h } from "./dom";
import { highlightCode } from "./highlight";

const md: MarkdownIt = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  // markdown-it escapes the code itself when this returns "".
  highlight: (code, lang) => highlightCode(code, lang) ?? "",
});

export function renderMarkdown(text: string, onCopy: (code: string) => void): HTMLElement {
  const root = h("div", { class: "md" });
  const clean = DOMPurify.sanitize(md.render(text), {
    FORBID_TAGS: ["style", "form", "input", "img"],
    FORBID_ATTR: ["style"],
  });
  root.innerHTML = clean;
  for (const a of Array.from(root.querySelectorAll("a"))) {
    a.setAttribute("rel", "noreferrer noopener");
  }
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    const code = pre.textContent ?? "";
    const lang = pre.querySelector("code")?.className.replace(/^language-/, "") ?? "";
    const bar = h(
      "div",
      { class: "code-bar" },
      h("span", { class: "code-lang" }, lang),
      h("button", { type: "button", class: "copy", "aria-label": "Copy code", onclick: () => onCopy(code) }, "Copy"),
    );
    const wrap = h("div", { class: "code-block" });
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
  return root;
}
