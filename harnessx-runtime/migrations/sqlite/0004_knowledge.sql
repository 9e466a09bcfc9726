-- Schema 4: the documents of the platform's knowledge bases (each base is a `knowledge_base`
-- resource), indexed for full-text search by FTS5.
--
-- `knowledge_fts` is an external-content FTS5 table over `knowledge_documents` (it stores only
-- the index; snippets read the text from the documents), kept in step by the triggers below.
-- Ids come from AUTOINCREMENT, so a deleted document's id is never given to another.
CREATE TABLE knowledge_documents (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    base       TEXT    NOT NULL,
    title      TEXT    NOT NULL,
    format     TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    bytes      INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX knowledge_documents_by_base ON knowledge_documents (base, id);
CREATE VIRTUAL TABLE knowledge_fts USING fts5(
    title, body,
    content = 'knowledge_documents', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER knowledge_documents_added AFTER INSERT ON knowledge_documents BEGIN
    INSERT INTO knowledge_fts (rowid, title, body) VALUES (new.id, new.title, new.body);
END;
CREATE TRIGGER knowledge_documents_deleted AFTER DELETE ON knowledge_documents BEGIN
    INSERT INTO knowledge_fts (knowledge_fts, rowid, title, body)
    VALUES ('delete', old.id, old.title, old.body);
END;
CREATE TRIGGER knowledge_documents_changed AFTER UPDATE ON knowledge_documents BEGIN
    INSERT INTO knowledge_fts (knowledge_fts, rowid, title, body)
    VALUES ('delete', old.id, old.title, old.body);
    INSERT INTO knowledge_fts (rowid, title, body) VALUES (new.id, new.title, new.body);
END;
