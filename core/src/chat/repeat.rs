//! A guard against an answer that loops: a small model that has run out of
//! things to say often starts over, copying what it already wrote (the
//! same excerpt, the same list of citations) until `max_tokens` stops it.
//!
//! It exists because such an answer costs the reader twice: the loop runs
//! to the token limit (on a 2-core machine, about a minute more of
//! waiting), and the copies bury the answer. Measured on the dev questions
//! with a 1.5B model, one answer in ten ended that way. The guard sees the
//! loop as soon as the newest [`REPEAT_WINDOW`] bytes of the answer copy
//! earlier text; the stream then stops ([`crate::chat::ChatStream`]) and
//! the answer ends where the copy began, so the reader keeps one copy of
//! everything the model said. It is pure text matching, the same for every
//! model and server, in the CLI and the browser alike.

/// Bytes of exact copy that count as a loop. Long enough that an answer
/// which legitimately says the same short thing twice (a path, a
/// signature, a citation) is not cut; short enough to stop within a few
/// lines of the loop's start.
pub const REPEAT_WINDOW: usize = 160;

/// Where `text` should end, when its last [`REPEAT_WINDOW`] bytes copy
/// earlier text: the byte offset where the copy begins (a char boundary,
/// after which `text` only repeats what came before). `None` when the
/// tail is new.
pub fn repetition_cut(text: &str) -> Option<usize> {
    let n = text.len();
    if n < 2 * REPEAT_WINDOW {
        return None;
    }
    let mut tail = n - REPEAT_WINDOW;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let window = &text[tail..];
    if window.trim().len() < REPEAT_WINDOW / 2 {
        // Mostly blank: indentation or padding, not a copy of anything said.
        return None;
    }
    // The latest earlier occurrence, so the period is the loop's own (it
    // may be shorter than the window: a short phrase said over and over).
    // Every occurrence before `tail` ends before the text's last character,
    // so the search leaves that character out (a whole character: the text
    // may end in a multi-byte one).
    let last = text.chars().next_back().map_or(0, char::len_utf8);
    let earlier = text[..n - last].rfind(window).filter(|&p| p < tail)?;
    let period = tail - earlier;
    let bytes = text.as_bytes();
    // Extend the copy backwards as far as it goes.
    let mut start = tail;
    while start > period && bytes[start - 1] == bytes[start - 1 - period] {
        start -= 1;
    }
    while !text.is_char_boundary(start) {
        start += 1;
    }
    Some(start)
}

/// The first place a whole answer begins to repeat itself: the cut
/// [`repetition_cut`] finds on the shortest prefix (a line at a time) that
/// ends in a copy, as a stream would have met it.
pub fn first_repetition(text: &str) -> Option<usize> {
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        end += line.len();
        if let Some(cut) = repetition_cut(&text[..end]) {
            return Some(cut);
        }
    }
    None
}

/// `text` cut at `cut` ([`repetition_cut`]), ending on a whole line or
/// sentence when the copy began inside one, with a code fence the cut left
/// open closed again.
pub fn cut_answer(text: &str, cut: usize) -> String {
    let kept = &text[..cut];
    let at_line_end = kept.is_empty() || kept.ends_with('\n') || text[cut..].starts_with('\n');
    let kept = if at_line_end {
        kept
    } else {
        let line = kept.rfind('\n').map(|i| i + 1);
        let sentence = [". ", "! ", "? "]
            .iter()
            .filter_map(|end| kept.rfind(end).map(|i| i + 1))
            .max();
        match line.max(sentence) {
            Some(end) => &kept[..end],
            None => kept,
        }
    };
    let mut out = kept.trim_end().to_string();
    let fences = out
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    if fences % 2 == 1 {
        out.push_str("\n```");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str = "- [3] src/Field.cpp:10-20\n```cpp\nvoid exchange() {\n    send(left);\n    receive(right);\n}\n```\n\n- [5] src/Field.cpp:30-40\n```cpp\nvoid fill() { halo = 0; }\n```\n";

    #[test]
    fn a_block_said_again_is_cut_where_the_copy_begins() {
        let head = "The halo is exchanged in two steps.\n\n";
        let mut text = format!("{head}{BLOCK}");
        assert_eq!(repetition_cut(&text), None);
        // The copies grow line by line; once a window of them repeats, the
        // cut falls where the first copy began, before the loop ends.
        let mut cut = None;
        for line in BLOCK.repeat(3).split_inclusive('\n') {
            text.push_str(line);
            cut = cut.or(repetition_cut(&text).map(|c| (c, text.len())));
        }
        let (at, seen) = cut.expect("the copy is seen");
        assert!(seen < head.len() + 3 * BLOCK.len(), "seen at {seen}");
        assert_eq!(cut_answer(&text, at), format!("{head}{BLOCK}").trim_end());
    }

    #[test]
    fn a_phrase_said_over_and_over_is_cut_after_its_first_time() {
        let text = format!("Answer: {}", "the field is updated and ".repeat(20));
        let at = repetition_cut(&text).expect("a loop");
        assert_eq!(text[..at].trim_end(), "Answer: the field is updated and");
    }

    #[test]
    fn text_ending_in_a_multi_byte_character_is_cut_without_a_panic() {
        // A model's loop over a line that ends in "…" (3 bytes): the search
        // for an earlier copy must not cut that character in two.
        let line =
            "- [1] `src/Field.hpp` is defined in `src/Field.hpp:10-69`, lines 13-21 not shown…\n";
        let mut text = String::from("Answer.\n");
        let mut cut = None;
        for _ in 0..6 {
            for piece in [line.trim_end_matches('\n'), "\n"] {
                text.push_str(piece);
                cut = cut.or(repetition_cut(&text));
            }
        }
        let at = cut.expect("a loop");
        assert_eq!(
            cut_answer(&text, at),
            format!("Answer.\n{}", line.trim_end())
        );
        // Every prefix that ends on a character boundary, whatever its last
        // character.
        for end in (0..=text.len()).filter(|&e| text.is_char_boundary(e)) {
            let _ = repetition_cut(&text[..end]);
        }
        assert!(first_repetition(&text).is_some());
    }

    #[test]
    fn short_repeats_and_blank_padding_are_not_loops() {
        let sig = "`void exchange(Field& f)` in src/Field.cpp:10-20 [3]";
        // The same citation in every sentence, but no window said twice.
        let text: String = (0..6)
            .map(|i| format!("{sig} does step {i} of the exchange. "))
            .collect();
        assert!(text.len() > 2 * REPEAT_WINDOW);
        assert_eq!(first_repetition(&text), None);
        let padded = format!("{}x{}", " ".repeat(400), " ".repeat(400));
        assert_eq!(repetition_cut(&padded), None);
        assert_eq!(repetition_cut("short"), None);
    }

    #[test]
    fn cuts_fall_on_char_boundaries_and_close_an_open_fence() {
        let unit = "é—ü 🜁 ".repeat(8);
        let text = format!("```text\nNo loop yet. {unit}{unit}{unit}");
        let at = repetition_cut(&text).expect("a loop");
        assert!(text.is_char_boundary(at));
        let out = cut_answer(&text, at);
        assert!(out.ends_with("\n```"), "{out}");
        // A cut inside a line drops the partial sentence.
        assert_eq!(cut_answer("one\ntwo\nthr", 11), "one\ntwo");
        assert_eq!(cut_answer("One. Two", 8), "One.");
        assert_eq!(cut_answer("one\ntwo\nthree", 7), "one\ntwo");
    }
}
