// The library path of the benchmark: the same migration as `chunkmigrate run` in Tools/bench, through
// `MigrationJob`, with a column expression that calls a function registered from Swift.
//
// Usage: bench-api SOURCE DESTINATION SCHEMA.sql JOURNAL
import ChunkMigrate
import Foundation
import Logging

let arguments = CommandLine.arguments
guard arguments.count == 5 else {
    FileHandle.standardError.write(Data("usage: bench-api SOURCE DESTINATION SCHEMA.sql JOURNAL\n".utf8))
    exit(2)
}
let plan = MigrationPlan(entities: [
    EntityMapping(
        name: "Conversation", source: .init(table: "conversation", key: "id"),
        destination: .init(table: "conversation", key: "id"),
        columns: ["title": "title", "created_at": "created"]),
    EntityMapping(
        name: "Message", source: .init(table: "message", key: "id"),
        destination: .init(table: "message", key: "id"),
        columns: ["text": "swift_trim(body)", "sent_at": "created_at"],
        relationships: ["conversation_id": .init(from: "conversation_id", to: "Conversation")]),
])
// A transform SQL could do, done in Swift over the UTF-8 bytes: what a plan pays for a Swift
// function per row (a value in, a value out), beyond the work of the transform itself.
let trim = SQLFunction(name: "swift_trim", argumentCount: 1) { values in
    guard case let .text(text) = values[0] else { return values[0] }
    let bytes = text.utf8
    guard bytes.first == UInt8(ascii: " ") || bytes.last == UInt8(ascii: " ") else { return values[0] }
    let start = bytes.firstIndex { $0 != UInt8(ascii: " ") } ?? bytes.endIndex
    let end = bytes.lastIndex { $0 != UInt8(ascii: " ") }.map { bytes.index(after: $0) } ?? start
    return .text(String(text[start..<end]))
}
var logger = Logger(label: "bench-api")
logger.logLevel = .warning
var options = MigrationOptions()
options.functions = [trim]
do {
    let job = try MigrationJob.start(
        plan: plan, source: URL(fileURLWithPath: arguments[1]), destination: URL(fileURLWithPath: arguments[2]),
        journal: URL(fileURLWithPath: arguments[4]), schema: try String(contentsOfFile: arguments[3], encoding: .utf8),
        options: options, logger: logger)
    guard try job.runBlocking() == .complete else { exit(1) }
} catch {
    FileHandle.standardError.write(Data("bench-api: \(error)\n".utf8))
    exit(1)
}
