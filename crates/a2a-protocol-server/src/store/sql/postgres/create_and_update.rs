//! A group's creations and updates in one statement. A busy server has both kinds waiting
//! at once (each send creates its task, then writes what its agent did); in statements of one
//! kind, the writes of the other kind wait a whole statement more, commit included. The
//! statement is [`CREATE_MANY`]'s CTEs followed by [`UPDATE_MANY`]'s, renamed where the two
//! share a name and with the update's parameters numbered after the creation's; the answers
//! are the creations' (numbered from 1) then the updates' (numbered after them).

use std::sync::LazyLock;

use super::group::{CREATE_MANY, UPDATE_MANY};

/// The statement: [`CREATE_MANY`]'s parameters, then [`UPDATE_MANY`]'s.
pub(super) static CREATE_AND_UPDATE_MANY: LazyLock<String> = LazyLock::new(|| {
    let (create_ctes, create_answers) = split_answers(CREATE_MANY);
    let update = shift_parameters(UPDATE_MANY, highest_parameter(CREATE_MANY));
    let update = ["input", "messages", "push"]
        .iter()
        .fold(update, |sql, name| rename(&sql, name, &format!("{name}_u")));
    let (update_ctes, update_answers) = split_answers(&update);
    let update_ctes = update_ctes
        .strip_prefix("WITH ")
        .expect("UPDATE_MANY starts with its CTEs");
    let update_answers = update_answers.replacen(
        "SELECT i.ord,",
        "SELECT (SELECT count(*) FROM input) + i.ord,",
        1,
    );
    format!("{create_ctes},\n{update_ctes}\n{create_answers}\nUNION ALL\n{update_answers}")
});

/// `sql` split before its last line that starts with `SELECT`: the CTEs, and the answers.
fn split_answers(sql: &str) -> (&str, &str) {
    let at = sql
        .rfind("\nSELECT ")
        .expect("a group statement ends with its answers");
    (&sql[..at], &sql[at + 1..])
}

/// The highest `$n` in `sql`.
fn highest_parameter(sql: &str) -> usize {
    parameters(sql).map(|(_, n)| n).max().unwrap_or(0)
}

/// `sql` with every `$n` made `$(n + by)`.
fn shift_parameters(sql: &str, by: usize) -> String {
    let mut shifted = String::with_capacity(sql.len() + 64);
    let mut copied = 0;
    for (at, n) in parameters(sql) {
        shifted.push_str(&sql[copied..at]);
        shifted.push_str(&format!("${}", n + by));
        copied = at + 1 + n.to_string().len();
    }
    shifted.push_str(&sql[copied..]);
    shifted
}

/// Where each `$n` in `sql` starts, and its `n`.
fn parameters(sql: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    sql.match_indices('$').filter_map(|(at, _)| {
        let digits: String = sql[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok().map(|n| (at, n))
    })
}

/// `sql` with the word `name` (not part of a longer identifier) made `to`.
fn rename(sql: &str, name: &str, to: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut renamed = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    for (at, _) in sql.match_indices(name) {
        let before = sql[..at].chars().next_back();
        let after = sql[at + name.len()..].chars().next();
        if before.is_some_and(is_word) || after.is_some_and(is_word) {
            continue;
        }
        renamed.push_str(&sql[copied..at]);
        renamed.push_str(to);
        copied = at + name.len();
    }
    renamed.push_str(&sql[copied..]);
    renamed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_updates_parameters_follow_the_creations() {
        let create = highest_parameter(CREATE_MANY);
        let update = highest_parameter(UPDATE_MANY);
        let sql = CREATE_AND_UPDATE_MANY.as_str();
        assert_eq!(highest_parameter(sql), create + update);
        // Every parameter from 1 to the last is used: none lost, none doubled up.
        for n in 1..=create + update {
            assert!(
                parameters(sql).any(|(_, m)| m == n),
                "${n} is missing from\n{sql}"
            );
        }
    }

    #[test]
    fn the_two_kinds_name_their_ctes_apart() {
        let sql = CREATE_AND_UPDATE_MANY.as_str();
        for cte in [
            "input",
            "messages",
            "push",
            "input_u",
            "messages_u",
            "push_u",
        ] {
            assert_eq!(
                sql.matches(&format!("{cte} AS (")).count(),
                1,
                "{cte} is defined once in\n{sql}"
            );
        }
        assert!(sql.contains("SELECT (SELECT count(*) FROM input) + i.ord,"));
        assert_eq!(sql.matches("UNION ALL").count(), 1);
    }

    #[test]
    fn renaming_leaves_longer_names_alone() {
        assert_eq!(
            rename(
                "push AS (x), a2a_push_configs, push_id, (push)",
                "push",
                "push_u"
            ),
            "push_u AS (x), a2a_push_configs, push_id, (push_u)"
        );
        assert_eq!(
            shift_parameters("$1, $12::text[], $6", 21),
            "$22, $33::text[], $27"
        );
    }
}
