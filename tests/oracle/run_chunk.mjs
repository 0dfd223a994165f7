// Batch driver for the seed's chunkDocument (chunk.mjs), used by tests/test_chunking.py.
//
// stdin:  JSON array of {"doc": string, "title": string, "target": number}
// stdout: JSON array (one entry per input) of arrays of
//         {"text", "content", "section", "from", "to"}
//
// chunkDocument counts JavaScript string indices (UTF-16 code units); the SPEC counts
// Unicode code points. Only the offsets are converted here (from/to -> code points);
// the chunking itself is left exactly as the seed does it.
import { chunkDocument } from "./chunk.mjs";

function codePointIndex(doc) {
  // cp[i] = number of code points in doc.slice(0, i), for every UTF-16 index i
  // (an index inside a surrogate pair maps to the code point that holds it).
  const cp = new Int32Array(doc.length + 1);
  let u = 0;
  let n = 0;
  for (const ch of doc) { // iterates code points; a lone surrogate counts as one
    cp[u] = n;
    if (ch.length === 2) cp[u + 1] = n;
    u += ch.length;
    n += 1;
  }
  cp[u] = n;
  return cp;
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => { input += d; });
process.stdin.on("end", () => {
  const jobs = JSON.parse(input);
  const out = jobs.map(({ doc, title, target }) => {
    const cp = codePointIndex(doc);
    return chunkDocument(doc, title, target).map((c) => ({
      text: c.text, content: c.content, section: c.section, from: cp[c.from], to: cp[c.to],
    }));
  });
  process.stdout.write(JSON.stringify(out));
});
