//! Same-length rewrites of valid C++ that the tree-sitter grammar cannot
//! read, applied with the macro rewrites before the parse: a CUDA or HIP
//! launch configuration, `__has_include(<…>)`, an unnamed defaulted
//! pointer or reference parameter. Like every rewrite they keep each
//! byte's offset and line, so spans stay exact.

use super::blank;

/// `__has_include(<header>)` in a directive becomes
/// `__has_include("header")`, same length, which the grammar's
/// preprocessor expressions read.
pub(super) fn has_include_quoted(src: &str, buf: &mut [u8]) -> u32 {
    let mut count = 0;
    let mut from = 0;
    while let Some(k) = src[from..].find("__has_include") {
        let at = from + k + "__has_include".len();
        from = at;
        let rest = &src[at..];
        let ws = rest.len() - rest.trim_start().len();
        let Some(inner) = rest[ws..].strip_prefix('(') else {
            continue;
        };
        let iws = inner.len() - inner.trim_start().len();
        if !inner[iws..].starts_with('<') {
            continue;
        }
        let open = at + ws + 1 + iws;
        let Some(len) = src[open..].find('>') else {
            continue;
        };
        let close = open + len;
        if src[open..close].contains(['\n', ')']) {
            continue;
        }
        buf[open] = b'"';
        buf[close] = b'"';
        count += 1;
    }
    count
}

/// CUDA and HIP kernel launches, `kernel<<<grid, block>>>(args)`: the
/// launch configuration is blanked, leaving an ordinary call.
pub(super) fn kernel_launches_blanked(src: &str, buf: &mut [u8]) -> u32 {
    let mut count = 0;
    let mut from = 0;
    while let Some(k) = src[from..].find("<<<") {
        let open = from + k;
        let Some(len) = src[open..].find(">>>") else {
            break;
        };
        let close = open + len + 3;
        // One launch configuration: no statement or block inside.
        if !src[open..close].contains([';', '{', '}']) {
            blank(buf, (open, close));
            count += 1;
        }
        from = close;
    }
    count
}

/// An unnamed pointer or reference parameter with a default value,
/// `std::enable_if_t<C>* = nullptr` (the usual way to constrain a template
/// before concepts), is valid C++ that the grammar cannot read: the whole
/// declaration becomes an ERROR node. The first space between the `*` or
/// `&` and the `=` becomes the name `_`, same length. Nowhere else in C++
/// does a `*` or `&` stand before a lone `=` with only spaces between
/// (`*=` and `&=` are written together), and in a comment or string the
/// rewrite changes nothing the parser keeps.
pub(super) fn unnamed_defaulted_parameters_named(src: &str, buf: &mut [u8]) -> u32 {
    let b = src.as_bytes();
    let mut count = 0;
    for (k, &c) in b.iter().enumerate() {
        if c != b'*' && c != b'&' {
            continue;
        }
        let spaces = b[k + 1..]
            .iter()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count();
        let eq = k + 1 + spaces;
        if spaces > 0 && b.get(eq) == Some(&b'=') && b.get(eq + 1) != Some(&b'=') {
            buf[k + 1] = b'_';
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::super::tests::neutralise_default;

    #[test]
    fn unnamed_defaulted_pointer_parameters_get_a_name() {
        let src = "template <class T>\nvoid f(T x, std::enable_if_t<is_big<T>>* = nullptr, const T& = T(), int&& = 0) {}\nx *= 2; y &= 1; if (a == b) {}\n";
        let n = neutralise_default(src);
        assert_eq!(n.count, 3, "{}", n.text);
        assert!(
            n.text.contains(">>*_= nullptr, const T&_= T(), int&&_= 0)"),
            "{}",
            n.text
        );
        assert!(n.text.contains("x *= 2; y &= 1; if (a == b)"), "{}", n.text);
        assert_eq!(n.text.len(), src.len());
    }
}
