// Builds the extension host bundle (vscode is external) and the webview bundle.
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

const production = process.argv.includes("--production");
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "warning" };

await esbuild.build({
  ...common,
  entryPoints: ["src/extension.ts"],
  outfile: "dist/extension.js",
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
});
await esbuild.build({
  ...common,
  entryPoints: ["src/webview/main.ts"],
  outfile: "dist/webview/chat.js",
  platform: "browser",
  format: "iife",
  target: "es2020",
});
mkdirSync("dist/webview", { recursive: true });
copyFileSync("media/chat.css", "dist/webview/chat.css");
