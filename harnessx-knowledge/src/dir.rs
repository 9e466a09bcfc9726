//! A knowledge base from a folder of text files in one line: [`SqliteKnowledgeBase::from_dir`].

use std::path::{Path, PathBuf};

use super::{Document, KnowledgeBase, KnowledgeError, SqliteKnowledgeBase};

/// The file extensions [`SqliteKnowledgeBase::from_dir`] reads (case-insensitive).
pub const TEXT_EXTENSIONS: &[&str] = &["md", "markdown", "mdx", "txt", "text", "rst", "adoc"];

impl SqliteKnowledgeBase {
    /// An in-memory knowledge base holding every text file under `dir` (Markdown, plain text,
    /// reStructuredText and AsciiDoc: [`TEXT_EXTENSIONS`]), named after the folder. Each file is
    /// a document whose source is its path relative to `dir` (with `/` separators) and whose
    /// title is its first Markdown heading, if any. Hidden files and folders are skipped, and
    /// so are files that are not UTF-8 text.
    ///
    /// Fails when `dir` cannot be read, naming it.
    ///
    /// ```
    /// use harnessx::knowledge::{KnowledgeBase, SqliteKnowledgeBase};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::knowledge::KnowledgeError> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir(dir.path().join("it")).unwrap();
    /// # std::fs::write(dir.path().join("it/vpn.md"), "# VPN access\n\nUse the WireGuard profile.").unwrap();
    /// let kb = SqliteKnowledgeBase::from_dir(dir.path()).await?;
    /// let hits = kb.search("vpn", 3).await?;
    /// assert_eq!(hits[0].source, "it/vpn.md");
    /// assert_eq!(hits[0].title.as_deref(), Some("VPN access"));
    /// # Ok(()) }
    /// ```
    pub async fn from_dir(dir: impl AsRef<Path>) -> Result<Self, KnowledgeError> {
        let dir = dir.as_ref().to_path_buf();
        let name = dir
            .canonicalize()
            .ok()
            .as_deref()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "knowledge".to_owned());
        let root = dir.clone();
        let documents = tokio::task::spawn_blocking(move || read_dir(&root))
            .await
            .map_err(|e| KnowledgeError::Crashed {
                operation: "read a folder",
                reason: e.to_string(),
            })??;
        let kb = Self::in_memory()?.named(name);
        kb.add_documents(documents).await?;
        Ok(kb)
    }
}

/// The text files under `root`, in path order.
fn read_dir(root: &Path) -> Result<Vec<Document>, KnowledgeError> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    let mut documents = Vec::with_capacity(files.len());
    for path in files {
        let bytes = std::fs::read(&path).map_err(|source| KnowledgeError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let source = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let mut doc = Document::new(source, text);
        doc.title = markdown_title(&doc.text);
        documents.push(doc);
    }
    Ok(documents)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), KnowledgeError> {
    let read = |source| KnowledgeError::Read {
        path: dir.display().to_string(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        // `file_type` does not follow links: a link to a folder cannot make the walk loop.
        let kind = entry.file_type().map_err(read)?;
        if kind.is_dir() {
            walk(&path, out)?;
        } else if is_text_file(&path) && std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            out.push(path);
        }
    }
    Ok(())
}

fn is_text_file(path: &Path) -> bool {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .is_some_and(|e| TEXT_EXTENSIONS.contains(&e.as_str()))
}

/// The text of the first `# ` heading, when the file starts with one (after blank lines or
/// YAML front matter).
fn markdown_title(text: &str) -> Option<String> {
    let mut lines = text.lines().map(str::trim);
    let mut line = lines.by_ref().find(|l| !l.is_empty())?;
    if line == "---" {
        lines.by_ref().find(|l| *l == "---")?;
        line = lines.by_ref().find(|l| !l.is_empty())?;
    }
    line.strip_prefix("# ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_a_leading_heading() {
        assert_eq!(
            markdown_title("\n# VPN access \nbody").as_deref(),
            Some("VPN access")
        );
        assert_eq!(
            markdown_title("---\ntitle: x\n---\n\n# After front matter").as_deref(),
            Some("After front matter")
        );
        assert_eq!(markdown_title("Intro\n# Later heading"), None);
        assert_eq!(markdown_title("## Second level"), None);
        assert_eq!(markdown_title(""), None);
    }

    #[test]
    fn only_text_extensions_are_read() {
        assert!(is_text_file(Path::new("a/README.MD")));
        assert!(is_text_file(Path::new("notes.txt")));
        assert!(!is_text_file(Path::new("logo.png")));
        assert!(!is_text_file(Path::new("Makefile")));
    }
}
