import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  containsPattern,
  facetsOf,
  foldSearchText,
  ftsPhrase,
  isSymbolsOnly,
  prefixTokens,
  symbolsOf,
} from '../../src/influencer/search-text.js';

/** The folding function alone (no database): what the README's folding decision promises. */
describe('foldSearchText', () => {
  it.each([
    ['Émile', 'emile'],
    ['ÉMILE', 'emile'],
    ['Straße', 'strasse'],
    ['STRASSE', 'strasse'],
    ['ẞ', 'ss'],
    ['ΟΔΟΣ', 'οδοσ'],
    ['οδος', 'οδοσ'],
    ['Σοφία', 'σοφια'],
    ['Ёлка', 'елка'],
    ['МАРИЯ', 'мария'],
    ['Ａｄａ', 'ada'], // full-width
    ['ﬁne', 'fine'], // ligature
    ['İstanbul', 'istanbul'],
    ['Zoe\u0308', 'zoe'], // decomposed input
    ['100% _real_ \\o/', '100% _real_ \\o/'],
    ['❤\ufe0f Love', '❤ love'], // the emoji keyboard's heart
    ['O’Neil', "o'neil"], // a phone's smart punctuation
    ['Ada – Music — Live −1', 'ada - music - live -1'],
    ['Søren Łukasz Đorđe', 'soren lukasz dorde'],
    ['Ħasan Ŧomić', 'hasan tomic'],
    ['ÆSIR Œuvre', 'aesir oeuvre'],
  ])('%s → %s', (input, folded) => {
    expect(foldSearchText(input)).toBe(folded);
  });

  it('is idempotent, for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 30 }), (text) => {
        const once = foldSearchText(text);
        expect(foldSearchText(once)).toBe(once);
      }),
      { numRuns: 2_000 },
    );
  });

  it('maps every case and accent variant of a name to one text', () => {
    const variants = ['josé garcía', 'JOSÉ GARCÍA', 'Jose Garcia', 'José García', 'JOSE GARCIA'];
    expect(new Set(variants.map(foldSearchText))).toEqual(new Set(['jose garcia']));
  });
});

describe('prefixTokens', () => {
  it('the 1- and 2-character starts of the handle and of each word of the name', () => {
    expect(prefixTokens('ada_l', 'ada lovelace-byron').sort()).toEqual(
      ['a', 'ad', 'b', 'by', 'l', 'lo'].sort(),
    );
  });

  it('the start of the name even when it is not a word, and no token ends in a space', () => {
    expect(prefixTokens('xyz', '@ada b').sort()).toEqual(['@', '@a', 'a', 'ad', 'b', 'x', 'xy']);
  });

  it('a word that starts after a space with what Unicode sees as no word (#, @, an emoji)', () => {
    expect(prefixTokens('xyz', 'i love #music @ada 🔥 hot').sort()).toEqual(
      [
        '#',
        '#m',
        '@',
        '@a',
        'a',
        'ad',
        'h',
        'ho',
        'i',
        'l',
        'lo',
        'm',
        'mu',
        'x',
        'xy',
        '🔥',
      ].sort(),
    );
  });

  it('no token starts with white space (a run of spaces of two kinds is no word)', () => {
    const tokens = prefixTokens('xyz', 'a \u00a0b\u2003 c');
    expect(tokens.filter((token) => /^\s/u.test(token))).toEqual([]);
    expect(tokens).toEqual(expect.arrayContaining(['b', 'c']));
  });

  it('words without spaces (Japanese) by Unicode word segmentation', () => {
    expect(prefixTokens('yamada', '山田太郎')).toEqual(
      expect.arrayContaining(['山', '山田', '太', '太郎']),
    );
  });

  it('counts code points, not UTF-16 units', () => {
    expect(prefixTokens('abc', '😀😁😂')).toEqual(expect.arrayContaining(['😀', '😀😁']));
  });
});

describe('query escaping', () => {
  it('LIKE: %, _ and \\ are literal', () => {
    expect(containsPattern('100%_\\')).toBe('%100\\%\\_\\\\%');
  });

  it('FTS5: the text is one quoted phrase', () => {
    expect(ftsPhrase('say "hi" OR x')).toBe('"say ""hi"" OR x"');
  });
});

describe('facetsOf', () => {
  it('everyone, each category, each prefix', () => {
    expect(
      facetsOf({ handle: 'ada', search_name: 'ada', categories: ['art', 'tech'] }).sort(),
    ).toEqual(['*', 'c:art', 'c:tech', 'p:a', 'p:ad'].sort());
  });

  it("each symbol of the name, once; the handle's _ only where it has __", () => {
    const facets = (handle: string, name: string) =>
      facetsOf({ handle, search_name: name, categories: [] }).filter((f) => f.startsWith('s:'));
    expect(facets('ada_l', 'dr. a.b-c 🔥🔥').sort()).toEqual(['s:-', 's:.', 's:🔥'].sort());
    expect(facets('ada__l', 'ada')).toEqual(['s:_']);
    expect(facets('ada_l', 'o_o')).toEqual(['s:_']);
    expect(facets('ada', 'naïve straße 42')).toEqual([]);
  });
});

describe('symbol queries', () => {
  it('symbols are what is neither letter, mark, digit nor space', () => {
    expect(symbolsOf('a.b. c…🔥 ١٢ ि')).toEqual(['.', '…', '🔥']);
  });

  it('a query is symbols only when it has a symbol and no letter, mark or digit', () => {
    for (const q of ['...', '🔥🔥🔥', '_ _', '%%%', '(-_-)'])
      expect(isSymbolsOnly(q), q).toBe(true);
    for (const q of ['a.b', '...1', 'ツツツ', '   ', '.ि.'])
      expect(isSymbolsOnly(q), q).toBe(false);
  });
});
