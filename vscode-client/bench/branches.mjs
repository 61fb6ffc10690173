// Prints how long the chat takes to list a session's branches (branchesOf over the
// crank/tree answer, which VS Code reads after every run) for a session of N messages
// with B branches, at two sizes each, and the ratio: it should follow N and B, not
// their squares (asking every other branch's path for each entry took 2.6 s at 50,000
// messages and one branch). The tree here is built in the shape crank/tree sends.
// Run after `npx tsc -p tsconfig.test.json` (test.sh does it): node bench/branches.mjs
import { performance } from "node:perf_hooks";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { branchesOf } = require("../build/test/src/chat/branches.js");

/** n messages in one line, then `branches - 1` more branches, each leaving it at an even
 * spread of points and running as long as what they left. */
function tree(n, branches) {
  const entries = [];
  const message = (id, parentId, i) => entries.push({ id, parentId, type: "message", role: i % 2 ? "assistant" : "user", preview: `${id} text` });
  for (let i = 0; i < n; i++) message(`e${i}`, i ? `e${i - 1}` : null, i);
  let tip = `e${n - 1}`;
  for (let b = 1; b < branches; b++) {
    const from = Math.floor((n * b) / branches);
    let prev = `e${from}`;
    for (let i = from + 1; i < n; i++) {
      message(`b${b}-${i}`, prev, i);
      prev = `b${b}-${i}`;
    }
    tip = prev;
  }
  return { tip, entries };
}

const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const branches of [2, 8]) {
  const at = [];
  for (const n of [10000, 50000]) {
    const t = tree(n, branches);
    const runs = Array.from({ length: 5 }, () => {
      const t0 = performance.now();
      const listed = branchesOf(t);
      if (listed.length !== branches) throw new Error(`${listed.length} branches listed, ${branches} made`);
      return performance.now() - t0;
    });
    at.push(median(runs));
    console.log(`messages=${n} branches=${branches} (${t.entries.length} entries): median ${at[at.length - 1].toFixed(1)} ms`);
  }
  console.log(`branches=${branches}: ratio 50,000 / 10,000 messages ${(at[1] / at[0]).toFixed(2)} (linear: 5)`);
}
