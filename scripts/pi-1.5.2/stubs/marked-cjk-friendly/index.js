// Stand-in for marked-cjk-friendly@0.1.2, which the npm registry reached here does not have.
//
// pi-tui 1.5.2 hands marked `{ tokenizer: { emStrong: markedCjkFriendly().tokenizer?.emStrong } }`.
// marked wraps every tokenizer it is given and calls it first, so an extension without one
// leaves `emStrong` undefined and the first emphasis crashes Pi's TUI
// ("Cannot read properties of undefined (reading 'apply')").
//
// This one has an `emStrong` that hands every emphasis back (returns false), so marked's own
// rule reads it. Bold or italic beside CJK punctuation renders as plain marked does.
// Nothing bonsai compares depends on it.
export default function markedCjkFriendly() {
	return {
		tokenizer: {
			emStrong() {
				return false;
			},
		},
	};
}
