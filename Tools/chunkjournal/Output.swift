import Foundation
import MigrationJournal

/// The few formatting rules the subcommands share.
enum Output {
    /// Prints `value` as one JSON document with sorted keys.
    static func printJSON<Value: Encodable>(_ value: Value) {
        // The reports are plain structs of strings and numbers: encoding cannot fail.
        let data = try! JSONEncoder.sortedAndIndented().encode(value)
        print(String(decoding: data, as: UTF8.self))
    }

    /// Prints rows as left-aligned columns separated by two spaces, trailing spaces trimmed.
    static func printTable(_ rows: [[String]], indent: String = "") {
        var widths: [Int] = []
        for row in rows {
            for (column, cell) in row.enumerated() {
                if column == widths.count { widths.append(0) }
                widths[column] = max(widths[column], cell.count)
            }
        }
        for row in rows {
            var line = indent
            for (column, cell) in row.enumerated() {
                line += column == row.count - 1 ? cell : cell.padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0)
            }
            while line.hasSuffix(" ") { line.removeLast() }
            print(line)
        }
    }

    /// A CRC as eight lowercase hexadecimal digits.
    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// Milliseconds since 1970 as ISO 8601 UTC with milliseconds; `nil` for 0, which records use
    /// for "not known".
    static func time(millis: Int64) -> String? {
        guard millis != 0 else { return nil }
        let date = Date(timeIntervalSince1970: Double(millis) / 1000)
        return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// An inclusive key range, `first..last`.
    static func range(_ first: Int64, _ last: Int64) -> String {
        "\(first)..\(last)"
    }
}
