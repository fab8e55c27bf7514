import ChunkMigrate
import Foundation

extension DemoStore {
    /// Checks a migrated demo destination against its source, independently of the journal: every
    /// message whose conversation is kept is there once, and every relationship (conversation,
    /// reply, label) points at the row it pointed at in the source. Message text carries the
    /// source message number, which is how rows are matched. Returns what is wrong; empty when
    /// the destination is right.
    package static func check(source: URL, destination: URL) throws -> [String] {
        let database = try Database(path: destination.path, mode: .readOnly)
        try database.attach(Database.sourceURI(source.path), as: "src")
        func number(_ column: String) -> String { "CAST(substr(\(column), 9, instr(\(column), ':') - 9) AS INTEGER)" }
        func sourceID(_ column: String) -> String { "(\(number(column)) * 3 - \(number(column)) % 2)" }
        let kept = "(SELECT c.archived = 0 FROM src.conversation c WHERE c.id = %@.conversation_id)"
        let checks: [(String, String)] = [
            (
                "messages whose conversation is kept but that are missing or doubled",
                """
                SELECT (SELECT count(*) FROM src.message s WHERE \(kept.replacingOccurrences(of: "%@", with: "s")))
                     - (SELECT count(DISTINCT \(number("text"))) FROM main.message)
                     + (SELECT count(*) - count(DISTINCT \(number("text"))) FROM main.message)
                """
            ),
            (
                "messages in the wrong conversation",
                """
                SELECT count(*) FROM main.message d JOIN src.message s ON s.id = \(sourceID("d.text"))
                LEFT JOIN main.conversation dc ON dc.id = d.conversation_id
                WHERE dc.title IS NOT 'conversation ' || s.conversation_id
                """
            ),
            (
                "replies that point at the wrong message",
                """
                SELECT count(*) FROM main.message d JOIN src.message s ON s.id = \(sourceID("d.text"))
                LEFT JOIN main.message dr ON dr.id = d.reply_to_id
                LEFT JOIN src.message sr ON sr.id = s.reply_to
                WHERE CASE WHEN sr.id IS NULL OR NOT \(kept.replacingOccurrences(of: "%@", with: "sr"))
                           THEN d.reply_to_id IS NOT NULL
                           ELSE dr.id IS NULL OR \(sourceID("dr.text")) <> sr.id END
                """
            ),
            (
                "message labels missing, doubled or wrong",
                """
                SELECT (SELECT count(*) FROM (
                           SELECT sl.message_id, l.name FROM src.message_label sl JOIN src.label l ON l.id = sl.label_id
                           JOIN src.message s ON s.id = sl.message_id WHERE \(kept.replacingOccurrences(of: "%@", with: "s"))
                           EXCEPT
                           SELECT \(sourceID("d.text")), l.name FROM main.message_label dl
                           JOIN main.message d ON d.id = dl.message_id JOIN main.label l ON l.id = dl.label_id))
                     + (SELECT count(*) FROM (
                           SELECT \(sourceID("d.text")), l.name FROM main.message_label dl
                           JOIN main.message d ON d.id = dl.message_id JOIN main.label l ON l.id = dl.label_id
                           EXCEPT
                           SELECT sl.message_id, l.name FROM src.message_label sl JOIN src.label l ON l.id = sl.label_id))
                     + abs((SELECT count(*) FROM main.message_label)
                           - (SELECT count(*) FROM src.message_label sl JOIN src.message s ON s.id = sl.message_id
                              WHERE \(kept.replacingOccurrences(of: "%@", with: "s"))))
                """
            ),
        ]
        var problems: [String] = []
        for (what, sql) in checks {
            let count = try database.scalar(sql).integer ?? -1
            if count != 0 { problems.append("\(what): \(count)") }
        }
        return problems
    }

    /// A few lines comparing the source with a migrated destination.
    package static func summary(source: URL, destination: URL) throws -> String {
        let database = try Database(path: destination.path, mode: .readOnly)
        try database.attach(Database.sourceURI(source.path), as: "src")
        var lines = ["table            source rows   destination rows"]
        for table in ["conversation", "message", "label", "message_label"] {
            let from = try database.scalar("SELECT count(*) FROM src.\(table)").integer ?? 0
            let to = try database.scalar("SELECT count(*) FROM main.\(table)").integer ?? 0
            lines.append(
                table.padding(toLength: 16, withPad: " ", startingAt: 0)
                    + String(from).leftPadded(12) + String(to).leftPadded(19))
        }
        let problems = try check(source: source, destination: destination)
        lines.append(
            problems.isEmpty
                ? "check: every kept row is there once and every relationship points where it pointed in the source"
                : "check FAILED: " + problems.joined(separator: "; "))
        return lines.joined(separator: "\n")
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
