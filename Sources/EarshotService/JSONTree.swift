// Untyped JSON for the control protocol (what Foundation's JSONSerialization was; FoundationEssentials has only the
// Codable coders). A tree is `[String: Any]`, `[Any]`, `String`, `Bool`, `Int` (an integral number that fits),
// `Double` (any other number) or `JSONNull`, read and written through JSONDecoder and JSONEncoder.
import FoundationEssentials

/// JSON's `null` inside a tree (what NSNull was).
public struct JSONNull: Sendable, Hashable {
    /// The null value.
    public init() {}
}

/// Reads and writes untyped JSON trees.
public enum JSONTree {
    /// Why a tree could not be written: it held a value JSON has no form for.
    public struct UnsupportedValue: Error {}

    /// The tree of one JSON text, whose top level must be an object or an array (as JSONSerialization required).
    public static func parse(_ bytes: some Collection<UInt8>) throws -> Any {
        let value = try JSONDecoder().decode(Value.self, from: Data(bytes))
        switch value {
        case .object, .array: return value.tree
        default: throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not an object or array"))
        }
    }

    /// The tree as JSON text on one line, object keys sorted.
    public static func text(_ tree: Any) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(try Value(tree)), as: UTF8.self)
    }

    private indirect enum Value: Codable {
        case null
        case bool(Bool)
        case int(Int)
        case double(Double)
        case string(String)
        case array([Value])
        case object([String: Value])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            // Tried in this order so that `true` stays a Bool and `3` an Int, never a Double.
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int.self) {
                self = .int(value)
            } else if let value = try? container.decode(Double.self) {
                self = .double(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([Value].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: Value].self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let value): try container.encode(value)
            case .int(let value): try container.encode(value)
            case .double(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            case .array(let value): try container.encode(value)
            case .object(let value): try container.encode(value)
            }
        }

        /// The value of a tree node.
        init(_ tree: Any) throws {
            switch tree {
            case is JSONNull: self = .null
            case let value as Bool: self = .bool(value)
            case let value as Int: self = .int(value)
            case let value as Int32: self = .int(Int(value))
            case let value as Int64: self = .int(Int(value))
            case let value as UInt32: self = .int(Int(value))
            case let value as Double: self = .double(value)
            case let value as String: self = .string(value)
            case let value as Substring: self = .string(String(value))
            case let value as [String: Any]: self = .object(try value.mapValues(Value.init))
            case let value as [Any]: self = .array(try value.map(Value.init))
            default: throw UnsupportedValue()
            }
        }

        /// The tree node of a value.
        var tree: Any {
            switch self {
            case .null: return JSONNull()
            case .bool(let value): return value
            case .int(let value): return value
            case .double(let value): return value
            case .string(let value): return value
            case .array(let value): return value.map(\.tree)
            case .object(let value): return value.mapValues(\.tree)
            }
        }
    }
}
