/* english.js: the command line's "does not look like English" check, for the page translator.
 *
 * notEnglishReason(line) is minformer.sentences.not_english_reason, rule for rule, and gives the
 * same reason in the same words, or null:
 *   - "it holds control characters such as U+0000": a control (Cc) other than tab, \n, \r;
 *   - "it has no words, only punctuation or symbols": no letter, no digit 0-9, not blank;
 *   - "it is mostly written in <Script> script": over half of its letters are not Latin;
 *   - "k of its n words are not English words the translator knows": over half of its words (at
 *     least 2) are not among the English words of the training sentences; a capitalized word
 *     after the first (a name: Tom, Boston) is not counted as unknown.
 * Which characters are letters, and of what script, which make words, which are capitals and how
 * each folds come from Python's own Unicode tables, with the word list, in english-data.js
 * (minformer.widget.english_data): a browser's tables differ from Python's by version, and the
 * two must agree. tests/test_english_js.py runs both on the same lines.
 *
 * widget.js loads this file and english-data.js with the engine; Node can require() it.
 */
(function (global) {
  "use strict";
  var data = null, vocabulary = null;
  // the characters Python's str.isspace (and so str.strip) takes for blanks, U+2000 to U+200A aside
  var PY_SPACE = [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
                  0x2028, 0x2029, 0x202f, 0x205f, 0x3000];

  function setData(d) {
    data = d;
    vocabulary = Object.create(null);
    for (var i = 0; i < d.words.length; i++) vocabulary[d.words[i]] = true;
  }

  function find(runs, c) { // the run [first, last, ...] holding code point c, or null
    var lo = 0, hi = runs.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1, r = runs[mid];
      if (c < r[0]) hi = mid - 1;
      else if (c > r[1]) lo = mid + 1;
      else return r;
    }
    return null;
  }

  function fold(word) { // str.casefold
    var out = "", cps = Array.from(word);
    for (var i = 0; i < cps.length; i++) {
      var f = data.fold[cps[i].codePointAt(0)];
      out += f === undefined ? cps[i] : f;
    }
    return out;
  }

  function words(cps) { // re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)*", line), on code points
    var out = [], i = 0, n = cps.length;
    function isWord(k) { return k < n && find(data.word, cps[k].codePointAt(0)) !== null; }
    while (i < n) {
      if (!isWord(i)) { i++; continue; }
      var start = i;
      while (isWord(i)) i++;
      while (i + 1 < n && (cps[i] === "'" || cps[i] === "\u2019") && isWord(i + 1)) {
        i++;
        while (isWord(i)) i++;
      }
      out.push(cps.slice(start, i).join(""));
    }
    return out;
  }

  function notEnglishReason(line, maxUnknown) {
    if (!data && global.MinformerEnglishData) setData(global.MinformerEnglishData);
    if (!data) return null; // no word list: no warning, as the command line without train.tsv
    if (maxUnknown === undefined) maxUnknown = 0.5;
    var cps = Array.from(String(line)), counts = [], order = [], letters = 0, other = 0, i, k;
    var blank = true, digit = false;
    for (i = 0; i < cps.length; i++) {
      var c = cps[i].codePointAt(0);
      if ((c <= 0x1f || (c >= 0x7f && c <= 0x9f)) && c !== 0x09 && c !== 0x0a && c !== 0x0d) {
        var hex = c.toString(16).toUpperCase();
        return "it holds control characters such as U+" + "0000".slice(hex.length) + hex;
      }
      if (c >= 0x30 && c <= 0x39) digit = true;
      if (PY_SPACE.indexOf(c) < 0 && !(c >= 0x2000 && c <= 0x200a)) blank = false;
    }
    for (i = 0; i < cps.length; i++) {
      var r = find(data.letters, cps[i].codePointAt(0));
      if (!r) continue;
      letters++;
      k = r[2];
      if (counts[k] === undefined) { counts[k] = 0; order.push(k); }
      counts[k]++;
      if (data.scripts[k] !== "Latin") other++;
    }
    if (!letters) return blank || digit ? null : "it has no words, only punctuation or symbols";
    if (other > letters / 2) {
      var main = -1;
      for (i = 0; i < order.length; i++) { // the commonest other script; the first seen on a tie
        k = order[i];
        if (data.scripts[k] !== "Latin" && (main < 0 || counts[k] > counts[main])) main = k;
      }
      return "it is mostly written in " + data.scripts[main] + " script";
    }
    var raw = words(cps);
    if (raw.length < 2) return null;
    var unknown = 0;
    for (i = 0; i < raw.length; i++) {
      var capital = i > 0 && find(data.upper, raw[i].codePointAt(0)) !== null;
      if (!vocabulary[fold(raw[i])] && !capital) unknown++;
    }
    if (unknown > maxUnknown * raw.length) {
      return unknown + " of its " + raw.length + " words are not English words the translator knows";
    }
    return null;
  }

  var api = { notEnglishReason: notEnglishReason, setData: setData };
  global.MinformerEnglish = api;
  if (typeof module !== "undefined" && module.exports) module.exports = api;
})(typeof self !== "undefined" ? self : globalThis);
