/**
 * Code-block highlighting in the chat: highlight.js's core with a fixed set of common
 * languages, bundled into the page (no CDN: the page's content security policy allows
 * no remote script, and the chat must work offline). Only a fence that names a known
 * language is highlighted; anything else stays plain text (no guessing, which is slow
 * and often wrong). The output is HTML of `<span class="hljs-...">` around escaped text;
 * the caller still runs it through DOMPurify with the rest of the reply. The colours
 * come from the VS Code theme (media/chat.css).
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import lua from "highlight.js/lib/languages/lua";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const languages = { bash, c, cpp, css, diff, go, java, javascript, json, lua, markdown, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, def] of Object.entries(languages)) hljs.registerLanguage(name, def);

/** Highlighted HTML for `code` in `lang` (a fence's info string), or undefined when the language is not known. */
export function highlightCode(code: string, lang: string): string | undefined {
  const name = lang.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (!name || !hljs.getLanguage(name)) return undefined;
  try {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  } catch {
    return undefined;
  }
}
