import { countMessagesTokens, warmTokenizer } from '../domain/tokens';
import { fmt, summary } from './stats';

/** Token counting sits on the estimate's path (budget: the whole estimate p50 ≤ 5 ms, DESIGN §13). */
const loadStarted = performance.now();
warmTokenizer();
const loadMs = performance.now() - loadStarted;

const prompt = 'Compare the economic policies of two countries over the last decade and explain the trade-offs. '.repeat(40);
const times: number[] = [];
for (let i = 0; i < 500; i += 1) {
  const t = performance.now();
  countMessagesTokens([{ role: 'user', content: `${prompt} ${i}` }]);
  times.push(performance.now() - t);
}
const s = summary(times);
console.log(
  `tokenizer: first load ${fmt(loadMs)}; count of a ${prompt.length}-char prompt over ${s.n} runs: p50 ${fmt(s.p50)}, p90 ${fmt(s.p90)}, p99 ${fmt(s.p99)} (budget p50 ≤ 5 ms)`,
);
