import ChunkMigrate
import Foundation

/// A generated store with the shape chunkmigrate is built for: conversations, messages that
/// belong to them and reply to each other, labels, and a many-to-many join between messages and
/// labels; with the destination schema and the plan that migrate it.
///
/// Used by `chunkmigrate demo`, the kill-and-resume harness, the benchmark and the tests.
///
/// ```swift
/// let files = try DemoStore.generate(in: folder, messages: 100_000)
/// let job = try MigrationJob.start(plan: DemoStore.plan, source: files.source, destination: folder.appending(path: "new.sqlite"),
///                                  journal: folder.appending(path: "journal"), schema: DemoStore.destinationSchema,
///                                  logger: logger)
/// ```
package enum DemoStore {
    /// The files ``generate(in:messages:)`` writes.
    package struct Files: Sendable {
        /// The source store, `source.sqlite`.
        package var source: URL
        /// The destination schema, `destination-schema.sql`.
        package var schema: URL
        /// The plan, `plan.json`.
        package var plan: URL
    }

    /// The source schema (version N).
    package static let sourceSchema = """
        CREATE TABLE conversation (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created INTEGER NOT NULL,
                                   archived INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE message (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, reply_to INTEGER,
                              body TEXT NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE label (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE message_label (message_id INTEGER NOT NULL, label_id INTEGER NOT NULL);
        """

    /// The destination schema (version N+1): renamed columns, a new column with a default,
    /// declared foreign keys.
    package static let destinationSchema = """
        CREATE TABLE conversation (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created_at INTEGER NOT NULL);
        CREATE TABLE message (id INTEGER PRIMARY KEY,
                              conversation_id INTEGER NOT NULL REFERENCES conversation(id),
                              reply_to_id INTEGER REFERENCES message(id),
                              text TEXT NOT NULL, sent_at INTEGER NOT NULL, is_read INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE label (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE message_label (message_id INTEGER NOT NULL REFERENCES message(id),
                                    label_id INTEGER NOT NULL REFERENCES label(id),
                                    UNIQUE (message_id, label_id));
        """

    /// The plan: archived conversations are left behind, so their messages (and those messages'
    /// labels) are skipped; replies to messages that do not exist become NULL.
    package static let plan = MigrationPlan(entities: [
        EntityMapping(
            name: "Conversation",
            source: .init(table: "conversation", key: "id", where: "archived = 0"),
            destination: .init(table: "conversation", key: "id"),
            keys: .allocate,
            columns: ["title": "title", "created_at": "created"]),
        EntityMapping(
            name: "Message",
            source: .init(table: "message", key: "id"),
            destination: .init(table: "message", key: "id"),
            columns: ["text": "body", "sent_at": "created_at", "is_read": "0"],
            relationships: [
                "conversation_id": .init(from: "conversation_id", to: "Conversation", missing: .skip),
                "reply_to_id": .init(from: "reply_to", to: "Message", missing: .null),
            ]),
        EntityMapping(
            name: "Label",
            source: .init(table: "label", key: "id"),
            destination: .init(table: "label", key: "id"),
            keys: .preserve,
            columns: ["name": "name"]),
        EntityMapping(
            name: "MessageLabel",
            source: .init(table: "message_label"),
            destination: .init(table: "message_label"),
            relationships: [
                "message_id": .init(from: "message_id", to: "Message", missing: .skip),
                "label_id": .init(from: "label_id", to: "Label"),
            ]),
    ])

    /// Writes `source.sqlite` with `messages` messages (one conversation per 100 messages, one in
    /// ten archived; about half the messages reply to an earlier one, one in fifty to a later one,
    /// one in five hundred to a message that does not exist; message keys have gaps), plus
    /// `destination-schema.sql` and `plan.json`, into `directory`. The same arguments give the
    /// same store.
    @discardableResult
    package static func generate(in directory: URL, messages: Int) throws -> Files {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let files = Files(
            source: directory.appendingPathComponent("source.sqlite"),
            schema: directory.appendingPathComponent("destination-schema.sql"),
            plan: directory.appendingPathComponent("plan.json"))
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: files.source.path + suffix)
        }
        let database = try Database(path: files.source.path, mode: .readWriteCreate)
        let conversations = max(1, messages / 100)
        try database.execute(
            """
            PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
            BEGIN;
            \(sourceSchema)
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(conversations))
            INSERT INTO conversation (id, title, created, archived)
            SELECT i, 'conversation ' || i, 1600000000 + i * 60, i % 10 = 0 FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(messages))
            INSERT INTO message (id, conversation_id, reply_to, body, created_at)
            SELECT i * 3 - (i % 2),
                   1 + (i * 7919) % \(conversations),
                   CASE WHEN i % 500 = 0 THEN -1
                        WHEN i % 50 = 0 AND i + 10 <= \(messages) THEN (i + 10) * 3 - ((i + 10) % 2)
                        WHEN i % 2 = 0 AND i > 5 THEN (i - 5) * 3 - ((i - 5) % 2)
                        ELSE NULL END,
                   'message ' || i || ': ' || substr('Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.', 1 + (i * 13) % 60, 70 + (i * 31) % 120),
                   1600000000 + i
            FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
            INSERT INTO label (id, name) SELECT i * 10, 'label ' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(messages / 2))
            INSERT INTO message_label (message_id, label_id)
            SELECT (i * 2 - 1) * 3 - ((i * 2 - 1) % 2), 10 * (1 + i % 20) FROM n;
            COMMIT;
            PRAGMA journal_mode = DELETE;
            """)
        try destinationSchema.write(to: files.schema, atomically: true, encoding: .utf8)
        try plan.encodedJSON().write(to: files.plan)
        return files
    }
}
