// Extracts the published test cases (input text and expected token ids) from the tests that ship inside the npm
// packages llama3-tokenizer-js@1.2.0 (src/llama3-tokenizer.js, defaultTests) and llama-tokenizer-js@1.2.2
// (llama-tokenizer.js, defaultTests). The JavaScript argument literals are evaluated by node itself, so nothing is
// retyped by hand. Usage (after `npm pack` of both packages and extracting them):
//   node extract-published-cases.js <file.js> <call-name> > out.json
// Call names: testEncodeAndDecode / testEncode (Llama 3), testCase (Llama 2).
const fs = require('fs');
const [file, ...names] = process.argv.slice(2);
const src = fs.readFileSync(file, 'utf8');
const cases = [];
for (const name of names) {
  const re = new RegExp('\\b' + name + '\\(', 'g');
  let m;
  while ((m = re.exec(src)) !== null) {
    // Skip the function's own definition.
    if (src.slice(Math.max(0, m.index - 9), m.index).includes('function')) continue;
    let i = m.index + m[0].length, depth = 1, quote = null;
    for (; i < src.length && depth > 0; i++) {
      const c = src[i];
      if (quote) { if (c === '\\') i++; else if (c === quote) quote = null; continue; }
      if (c === '"' || c === "'" || c === '`') quote = c;
      else if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') depth--;
    }
    const args = src.slice(m.index + m[0].length, i - 1);
    let value;
    try {
      const strings = extractArray('stringsThatLookLikeSpecialTokens');
      value = eval('(function(){ const stringsThatLookLikeSpecialTokens = ' + strings + '; return [' + args + ']; })()');
    } catch (e) { if (process.env.DEBUG) console.error(name, e.message, args.slice(0, 80)); continue; } // arguments that are not literals
    const [text, ids, options] = value;
    if (typeof text !== 'string' || !Array.isArray(ids)) continue;
    cases.push({ call: name, text, ids, options: options ?? null });
  }
}
function extractArray(variable) {
  const at = src.indexOf('const ' + variable + ' = [');
  if (at < 0) return '[]';
  const end = src.indexOf(']', at);
  return src.slice(at + ('const ' + variable + ' = ').length, end + 1);
}
process.stdout.write(JSON.stringify(cases, null, 1) + '\n');
