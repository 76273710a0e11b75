// Fails: `description_length` on a description longer than providers keep (warn by default; denied here).
use toolsmith::tool;

/// Searches notes by keyword and returns the titles of the notes that match, newest first, with the date each note was last changed, the notebook it belongs to, the tags the user gave it, and the first line of its text.
/// Searches notes by keyword and returns the titles of the notes that match, newest first, with the date each note was last changed, the notebook it belongs to, the tags the user gave it, the first line of its text, the number of attachments it has, whether it is shared with other people, and the names of the people it is shared with, so that the model can tell the user which note to open next and why, and it does all of this without ever changing a note, a notebook or a tag, because it only reads. Read-only. Not for notes in the trash, which need the trash tool, nor for notes that other people own and have not shared, which it cannot see, nor for searching the web, the user's mail, the calendar or files on disk, which other tools do, nor for counting words, which the statistics tool does far better and faster than this one can. It matches whole words only, ignores case and accents, and treats a quoted phrase as one term.
#[tool(effect = "read", deny(description_length))]
fn search_notes(
    /// Keywords.
    #[arg(length(max = 100))]
    query: String,
) -> usize {
    query.len()
}

fn main() {}
