// Stand-in for marked-cjk-friendly@0.1.2, which the npm registry reached here does not have.
// pi-tui 1.5.2 calls only markedCjkFriendly().tokenizer?.emStrong; an extension without a
// tokenizer keeps marked's own emphasis rules (bold or italic beside CJK punctuation renders as
// plain marked does). Nothing bonsai compares depends on it.
export default function markedCjkFriendly() {
	return {};
}
