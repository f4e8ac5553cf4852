// Times a GGUF file in the real llama.cpp (node-llama-cpp's prebuilt CPU build): prompt processing
// (prefill) and decode, for `miniquant vs-llama` (src/experiments/vs_llama.cpp). check.mjs checks
// what llama.cpp computes; this script only times it.
//
//   node speed.mjs request.json > answer.json
//
// request: { "model": "x.gguf", "threads": 2,
//            "kv_f32": true,                  // K/V cache in F32 as miniquant keeps it (llama.cpp's default: F16)
//            "prompt": [ids...],              // the prompt, evaluated as one batch
//            "decode": [ids...],              // fed one at a time after the prompt (fixed ids, not sampled)
//            "rounds": 1,                     // timed repetitions (default 1: the caller interleaves)
//            "warmup": true }                 // one untimed prompt + decode first (default true)
// answer:  { "llama_cpp": "<release>", "node_llama_cpp": "<version>",
//            "settings": { threads, context_size, batch_size, kv_cache, flash_attention },
//            "rounds": [ { "prefill_s", "prefill_tokens", "decode_s", "decode_tokens",
//                          "wall_prefill_s", "wall_decode_s" } ] }
//
// What is timed, and what is not:
// - prefill_s / decode_s are llama.cpp's own counters (llama_perf_context: t_p_eval for batches of
//   more than one token, t_eval for single tokens). Each covers llama_decode() from the batch's
//   start (after its validation) to llama_synchronize(): building and scheduling the graph, the
//   forward pass, and copying the requested logits into llama.cpp's output buffer. Not inside:
//   node-llama-cpp's JS batching, the hop to its worker thread, sampling (a separate native call
//   after the decode), and turning results into JS values. The addon calls llama_synchronize right
//   after every llama_decode, so single-token steps are counted as decode, never as prompt.
//   They are read back through context.printTimings() (llama_perf_context_print, which also
//   resets them), captured from llama.cpp's log: printed in ms with 2 decimals (10 us
//   resolution on a whole prompt or a whole decode run).
// - wall_prefill_s / wall_decode_s: the same evaluations timed from JS around
//   controlledEvaluate(), i.e. everything above plus node-llama-cpp's overhead and the sampling of
//   one token per evaluation. Kept for reference; the comparison uses llama.cpp's counters.
// - What llama.cpp computes: the prompt's last token alone asks for output (generateNext), so
//   llama_decode computes logits for the last position only; in its gpt2 graph that also means the
//   last layer's FFN (and its norm and residual) and the final norm and LM head run on that one
//   row (inp_out_ids), while every layer's attention, including the output projection, runs on
//   all rows. miniquant's prefill is run with the same option (SpeedOptions::prefill_last_only).
//   Each decode step is one token with the KV cache, logits of that token; the next input is the
//   next fixed id, not the sampled token, so both programs see the same ids.
// - Tokenization never happens: the ids come from the request.
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const req = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const modelPath = path.resolve(req.model);
const threads = req.threads ?? 2;
const prompt = req.prompt ?? [];
const decode = req.decode ?? [];
const rounds = req.rounds ?? 1;
if (prompt.length < 2) throw new Error("speed.mjs: the prompt needs at least 2 tokens (llama.cpp counts a 1-token batch as decode)");
if (decode.length < 1) throw new Error("speed.mjs: need at least one decode token");
if (!(rounds >= 1)) throw new Error("speed.mjs: rounds must be >= 1");

// llama.cpp's log lines arrive asynchronously (the addon queues them to the JS thread).
const perfLines = [];
const logger = (level, message) => {
  if (message.includes("llama_perf_context_print")) perfLines.push(message);
  else if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) process.stderr.write(message + "\n");
};
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.info, logger, maxThreads: threads});
const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true});
const contextSize = model.trainContextSize;
// node-llama-cpp keeps one cell free: at contextSize tokens it would shift the context (erase and
// evaluate again), work that is neither prompt nor decode.
if (prompt.length + decode.length > contextSize - 1)
  throw new Error(`speed.mjs: prompt ${prompt.length} + decode ${decode.length} exceed the model's context ${contextSize} less one cell`);
const kvType = req.kv_f32 ? "F32" : "F16";
const context = await model.createContext({
  contextSize,
  batchSize: contextSize,  // the whole prompt is one batch and one ubatch (the addon sets n_ubatch = n_batch)
  sequences: 1,
  threads,
  flashAttention: false,
  performanceTracking: true,  // llama.cpp's perf counters (no_perf = false)
  experimentalKvCacheKeyType: kvType,
  experimentalKvCacheValueType: kvType,
});
const seq = context.getSequence();

// Prints (and resets) llama.cpp's counters, waits for the log lines, and returns them.
async function readPerf() {
  perfLines.length = 0;
  await context.printTimings();
  const t0 = Date.now();
  while (!perfLines.some(l => l.includes(" eval time") && !l.includes("prompt eval")) && Date.now() - t0 < 5000)
    await new Promise(r => setTimeout(r, 1));
  const num = re => {
    for (const l of perfLines) {
      const m = l.match(re);
      if (m) return [Number(m[1]), Number(m[2])];
    }
    throw new Error(`llama.cpp's timings not found in its log: ${JSON.stringify(perfLines)}`);
  };
  const [pMs, pTok] = num(/prompt eval time\s*=\s*([\d.]+) ms\s*\/\s*(\d+) tokens/);
  const [eMs, eRuns] = num(/\beval time\s*=\s*([\d.]+) ms\s*\/\s*(\d+) runs/);
  return {prompt_ms: pMs, prompt_tokens: pTok, eval_ms: eMs, eval_runs: eRuns};
}

const last = (ids) => ids.map((t, i) => (i === ids.length - 1 ? [t, {generateNext: {token: true}}] : t));

async function once() {
  await seq.clearHistory();
  await readPerf();  // resets the counters (clearing the cache evaluates nothing)
  let t0 = process.hrtime.bigint();
  await seq.controlledEvaluate(last(prompt));
  const wallPrefill = Number(process.hrtime.bigint() - t0) / 1e9;
  const p = await readPerf();
  t0 = process.hrtime.bigint();
  for (const t of decode) await seq.controlledEvaluate([[t, {generateNext: {token: true}}]]);
  const wallDecode = Number(process.hrtime.bigint() - t0) / 1e9;
  const d = await readPerf();
  // llama.cpp reports max(1, n) for an empty counter: check the counts it saw are exactly ours.
  if (p.prompt_tokens !== prompt.length || p.eval_ms !== 0)
    throw new Error(`llama.cpp counted the prompt as ${p.prompt_tokens} prompt tokens and ${p.eval_ms} ms of decode`);
  if (d.eval_runs !== decode.length || d.prompt_ms !== 0)
    throw new Error(`llama.cpp counted ${d.eval_runs} decode runs (expected ${decode.length}) and ${d.prompt_ms} ms of prompt`);
  return {
    prefill_s: p.prompt_ms / 1e3, prefill_tokens: p.prompt_tokens,
    decode_s: d.eval_ms / 1e3, decode_tokens: d.eval_runs,
    wall_prefill_s: wallPrefill, wall_decode_s: wallDecode,
  };
}

if (req.warmup ?? true) await once();
const out = [];
for (let r = 0; r < rounds; ++r) out.push(await once());

// node-llama-cpp's package.json is not in its "exports": read the installed file beside this script.
const pkg = path.join(path.dirname(fileURLToPath(import.meta.url)), "node_modules/node-llama-cpp/package.json");
process.stdout.write(JSON.stringify({
  llama_cpp: llama.llamaCppRelease?.release ?? null,
  node_llama_cpp: JSON.parse(fs.readFileSync(pkg, "utf8")).version,
  settings: {threads: context.currentThreads, context_size: context.contextSize, batch_size: context.batchSize,
             kv_cache: kvType, flash_attention: false},
  rounds: out,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
