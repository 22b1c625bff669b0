// Counts tokens with the providers' own tokenizers: reads a JSON array of strings on stdin and
// writes {"o200k_base": [n, ...], "claude": [n, ...]} (benchmarks/token_counts.py calls it).
// o200k_base is the encoding of GPT-4o, GPT-4.1 and the GPT-5 family; "claude" is Anthropic's
// published tokenizer, an older model's (Anthropic publishes none for Claude 3 and later).
import { countTokens } from '@anthropic-ai/tokenizer';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const texts = JSON.parse(Buffer.concat(chunks).toString('utf8'));
process.stdout.write(JSON.stringify({
  o200k_base: texts.map((text) => encode(text).length),
  claude: texts.map((text) => countTokens(text)),
}));
