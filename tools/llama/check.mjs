// Runs a GGUF file in the real llama.cpp (node-llama-cpp's prebuilt CPU build) and, independently,
// parses its header with @huggingface/gguf. Used by tests/test_gguf_llama_slow.cpp.
//
//   node check.mjs request.json > answer.json
//
// request: { "model": "x.gguf",                  // or "models": ["a.gguf", ...]: each answered in order
//                                               // under "models" (one Node start for several files)
//            "vocab": n, "threads": 2,
//            "kv_f32": true,                    // K/V cache in F32 (llama.cpp's default is F16)
//            "windows": [[ids...], ...],        // logits after every position of each window
//            "prompts": [[ids...], ...], "generate": 8,   // greedy continuation of each prompt
//            "texts": ["...", ...] }            // llama.cpp's tokenization (special tokens parsed)
// answer:  { "llama_cpp": "<release>",
//            "logits": [[[v0..v(n-1)] per position] per window],
//            "greedy": [[ids] per prompt], "tokens": [[ids] per text],
//            "header": { "version", "alignment"?, "tensors": [{name, shape, dtype, offset}], "metadata": {key: value (arrays: length)} } }
import fs from "node:fs";
import path from "node:path";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import {gguf} from "@huggingface/gguf";

const req = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: req.threads ?? 2});

// One model file: its header (a second, independent parser), and what llama.cpp computes for the request.
async function evaluate(file) {
  const modelPath = path.resolve(file);
  // Second, independent parser of the header and tensor table.
  const parsed = await gguf(modelPath, {allowLocalFile: true});
  const metadata = {};
  for (const [k, v] of Object.entries(parsed.metadata)) {
    metadata[k] = Array.isArray(v) ? {length: v.length, first: v.slice(0, 3)} : (typeof v === "bigint" ? Number(v) : v);
  }
  const header = {
    tensorDataOffset: Number(parsed.tensorDataOffset),
    tensors: parsed.tensorInfos.map(t => ({name: t.name, shape: t.shape.map(Number), dtype: t.dtype, offset: Number(t.offset)})),
    metadata,
  };

  const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true});
  const nVocab = req.vocab;  // the exporter knows it; llama.cpp must return exactly this many logits
  const kvType = req.kv_f32 ? "F32" : "F16";
  const context = await model.createContext({
    contextSize: model.trainContextSize,
    batchSize: model.trainContextSize,
    sequences: 1,
    threads: req.threads ?? 2,
    flashAttention: false,
    experimentalKvCacheKeyType: kvType,
    experimentalKvCacheValueType: kvType,
  });
  const seq = context.getSequence();

  function dense(pairs, n) {
    // node-llama-cpp returns [token, logit] pairs (sorted by logit); put them back in id order.
    const out = new Array(n).fill(null);
    for (const [tok, v] of pairs) out[tok] = v;
    if (out.some(v => v === null)) throw new Error(`llama.cpp returned ${pairs.length} logits for a vocabulary of ${n}`);
    return out;
  }

  function logitPairs(result) {
    const l = result?.next?.logits;
    if (!l) throw new Error("no logits in the evaluation result");
    return l instanceof Map ? [...l.entries()] : l;
  }

  const logits = [];
  for (const w of req.windows ?? []) {
    await seq.clearHistory();
    const input = w.map(t => [t, {generateNext: {logits: true}}]);
    const res = await seq.controlledEvaluate(input);
    logits.push(res.map(r => dense(logitPairs(r), nVocab)));
  }

  const greedy = [];
  for (const p of req.prompts ?? []) {
    await seq.clearHistory();
    const out = [];
    let input = p.map((t, i) => (i === p.length - 1 ? [t, {generateNext: {token: true}}] : t));
    for (let k = 0; k < (req.generate ?? 8); ++k) {
      const res = await seq.controlledEvaluate(input);
      const next = res[res.length - 1]?.next?.token;
      if (next === undefined || next === null) throw new Error("llama.cpp produced no token");
      out.push(next);
      input = [[next, {generateNext: {token: true}}]];
    }
    greedy.push(out);
  }

  const tokens = (req.texts ?? []).map(t => model.tokenize(t, true));

  await context.dispose();
  await model.dispose();
  return {logits, greedy, tokens, header};
}

// "models": several files in one run (one Node start), each answered in order under "models"; otherwise the
// single "model" answered at the top level.
const release = llama.llamaCppRelease?.release ?? null;
if (Array.isArray(req.models)) {
  const models = [];
  for (const m of req.models) models.push(await evaluate(m));
  process.stdout.write(JSON.stringify({llama_cpp: release, models}));
} else {
  process.stdout.write(JSON.stringify({llama_cpp: release, ...(await evaluate(req.model))}));
}
await llama.dispose();
