@testable import ChunkMigrate
import Testing

/// The SQL text of an entity's copy, read as text: what a batch asks SQLite to do.
@Suite("Copier SQL")
struct CopierSQLTests {
    static let message = EntityMapping(
        name: "Message", source: .init(table: "message", key: "id"), destination: .init(table: "message", key: "id"),
        columns: ["text": "body"],
        relationships: ["conversation_id": .init(from: "conversation_id", to: "Conversation")])

    @Test("allocated keys into a rowid table: the first relationship records the row, SQLite assigns the key")
    func allocateIntoRowid() {
        let sql = CopierSQL(
            entity: Self.message, index: 1, relationshipIndexes: ["conversation_id": 0],
            sourceAccess: .rowid, destinationAccess: .rowid, assignsNextRowid: true, verifyChecksums: false)
        #expect(sql.assignsKeys && !sql.isBounded && !sql.hasSkipRelationships)
        #expect(
            sql.insert == """
                INSERT OR ABORT INTO main."message" ("conversation_id", "text")
                SELECT cm_take_ref(0, s."conversation_id", s."id"), (body) FROM src."message" AS s NOT INDEXED
                WHERE s."id" > ?1 ORDER BY s."id" LIMIT ?2
                """)
        #expect(sql.insertFirst.contains("WHERE 1 ORDER BY"))
        #expect(sql.maxDestination == #"SELECT max("id") FROM main."message""#)
        #expect(sql.rangeFirst == nil && sql.destinationDigest == nil)
    }

    @Test("a destination SQLite does not assign, or preserved keys, write the key column")
    func keyColumn() {
        let notAssigned = CopierSQL(
            entity: Self.message, index: 1, relationshipIndexes: ["conversation_id": 0],
            sourceAccess: .rowid, destinationAccess: .rowid, assignsNextRowid: false, verifyChecksums: false)
        #expect(!notAssigned.assignsKeys)
        #expect(notAssigned.insert.contains(#"("id", "conversation_id", "text")"#))
        #expect(notAssigned.insert.contains(#"SELECT cm_take(s."id"), cm_ref(0, s."conversation_id", s."id")"#))
        var preserved = Self.message
        preserved.keys = .preserve
        let kept = CopierSQL(
            entity: preserved, index: 1, relationshipIndexes: ["conversation_id": 0],
            sourceAccess: .rowid, destinationAccess: .rowid, assignsNextRowid: true, verifyChecksums: false)
        #expect(kept.mapping == .preserve && kept.maxDestination == nil)
        #expect(kept.insert.contains(#"SELECT s."id", cm_take_ref(0, s."conversation_id", s."id")"#))
        let byIndex = CopierSQL(
            entity: preserved, index: 1, relationshipIndexes: ["conversation_id": 0],
            sourceAccess: .index("message_id"), destinationAccess: .rowid, assignsNextRowid: true,
            verifyChecksums: false)
        #expect(byIndex.insert.contains(#"FROM src."message" AS s INDEXED BY "message_id""#))
        #expect(byIndex.insert.contains(#"SELECT cm_take(s."id"), cm_ref("#))
    }

    @Test("a filter, a de-duplicated value and a skip relationship are tested in that order, each only when the one before passed")
    func boundedFilterOrder() {
        var entity = Self.message
        entity.source = .init(table: "message", key: "id", where: "archived = 0")
        entity.relationships = ["conversation_id": .init(from: "conversation_id", to: "Conversation", missing: .skip)]
        entity.distinct = .init(source: "lower(body)", destination: "name")
        let sql = CopierSQL(
            entity: entity, index: 3, relationshipIndexes: ["conversation_id": 0],
            sourceAccess: .rowid, destinationAccess: .rowid, assignsNextRowid: true, verifyChecksums: false)
        #expect(sql.isBounded && sql.hasSkipRelationships)
        #expect(
            sql.insert.contains(
                """
                WHERE s."id" BETWEEN ?1 AND ?3 AND CASE WHEN (archived = 0) THEN CASE WHEN cm_new(3, (lower(body))) \
                THEN cm_keep(s."id", 0, s."conversation_id") ELSE 0 END ELSE 0 END ORDER BY s."id" LIMIT ?2
                """))
        #expect(sql.insertFirst == sql.insert)
        #expect(sql.insert.contains(#""name")"#) && sql.insert.contains("(lower(body))"))
        #expect(
            sql.rangeFirst
                == #"SELECT min(k), max(k), count(*) FROM (SELECT s."id" AS k FROM src."message" AS s NOT INDEXED WHERE 1 ORDER BY s."id" LIMIT ?2)"#
        )
        #expect(sql.rangeNext?.contains(#"WHERE s."id" > ?1 ORDER BY"#) == true)
    }

    @Test("checksums digest the same values from both sides; a row of more than 100 values is hashed in parts")
    func checksums() {
        let sql = CopierSQL(
            entity: Self.message, index: 1, relationshipIndexes: ["conversation_id": 0],
            sourceAccess: .rowid, destinationAccess: .rowid, assignsNextRowid: true, verifyChecksums: true)
        #expect(
            sql.destinationDigest == """
                SELECT count(cm_digest(d."id", d."conversation_id", d."text")) FROM main."message" AS d
                WHERE d."id" BETWEEN ?1 AND ?2
                """)
        #expect(sql.sourceDigest?.contains(#"cm_digest(cm_dest(s."id"), cm_lookup(0, s."conversation_id", s."id"), (body))"#) == true)
        var wide = Self.message
        wide.columns = Dictionary(uniqueKeysWithValues: (0..<150).map { ("c\($0)", "v\($0)") })
        let hashed = CopierSQL(
            entity: wide, index: 1, relationshipIndexes: ["conversation_id": 0],
            sourceAccess: .rowid, destinationAccess: .rowid, assignsNextRowid: true, verifyChecksums: true)
        let digest = hashed.destinationDigest ?? ""
        #expect(digest.components(separatedBy: "cm_hash(").count - 1 == 2, "152 values: parts of 100 and 52")
    }

    @Test("a self-reference is fixed up from the source's forward references; a cycle visits the rows still NULL")
    func fixups() {
        let note = EntityMapping(
            name: "Note", source: .init(table: "note"), destination: .init(table: "note"),
            relationships: ["parent_id": .init(from: "parent", to: "Note"), "team_id": .init(from: "team", to: "Team")])
        let fixups = CopierSQL.fixups(
            entity: note, index: 2, deferred: ["parent_id", "team_id"],
            relationshipIndexes: ["parent_id": 4, "team_id": 5], selfReferences: ["parent_id"])
        let parent = fixups["parent_id"]
        #expect(parent?.relationship == 4 && parent?.bySource == true)
        #expect(parent?.sql.contains("WITH fix AS MATERIALIZED") == true)
        #expect(parent?.sql.contains(#"WHERE s.rowid BETWEEN ?1 AND ?2 AND s."parent" > s.rowid"#) == true)
        #expect(parent?.sql.contains("cm_destination_of(2, s.rowid)") == true)
        #expect(parent?.sql.contains("fix.target IS NOT NULL") == true)
        let team = fixups["team_id"]
        #expect(team?.relationship == 5 && team?.bySource == false)
        #expect(team?.sql.contains(#"WHERE d.rowid BETWEEN ?1 AND ?2 AND d."team_id" IS NULL"#) == true)
        #expect(team?.sql.contains("cm_source_of(2, d.rowid)") == true)
        #expect(CopierSQL.fixups(entity: note, index: 2, deferred: [], relationshipIndexes: [:], selfReferences: []).isEmpty)
    }
}
