import Foundation
import HTTPTypes
import Testing
@testable import ODataCore

/// Seeded fuzzing of every ODataCore parser that reads outside input. Each suite generates valid,
/// structured inputs (which must decode), then mutates them; every mutated input must give a value or
/// a typed ``ODataError`` with one of the codes the parser documents — never a crash or a hang.
/// Seeds are fixed and printed; each loop is bounded to a few thousand inputs and must end within ``budget``.
@Suite struct ParserFuzzTests {
    /// A hang guard, not a speed target (speeds are measured in `Benchmarks/`): a loop of a few thousand inputs takes
    /// about a second in a debug build and up to ~25 s under ThreadSanitizer on a loaded 2-core machine; a parser that
    /// loops or goes quadratic on some input exceeds a minute.
    static let budget = 60.0

    @Test(arguments: [UInt64(0x5EED_0001), 0x5EED_0002])
    func jsonParse(seed: UInt64) throws {
        var rejected = 0
        let seconds = try fuzzLoop("JSON.parse", seed: seed, iterations: 3_000) { factory, _ in
            let value = factory.json(depth: 5)
            let bytes = JSON.serialize(value)
            // Valid input: must parse back to the same value.
            let parsed = try JSON.parse(bytes)
            #expect(parsed == value)
            let mutated = factory.mutate(bytes)
            do throws(ODataError) { _ = try JSON.parse(mutated) } catch {
                rejected += 1
                #expect(error == .malformedJSON, "\(error) for \(Array(mutated.prefix(200)))")
                #expect(!error.message.isEmpty)
            }
        }
        #expect(rejected > 100, "the mutator must produce bad JSON")
        #expect(seconds < Self.budget)
    }

    @Test(arguments: [UInt64(0x5EED_0101)])
    func entitySetAndEntity(seed: UInt64) throws {
        var rejected = 0
        let seconds = try fuzzLoop("ODataPayload", seed: seed, iterations: 3_000) { factory, _ in
            let set = factory.entitySetPayload()
            _ = try ODataPayload.decodeEntitySet(set)
            let entity = factory.entityPayload()
            _ = try ODataPayload.decodeEntity(entity)
            for input in [factory.mutate(set), factory.mutate(entity)] {
                do throws(ODataError) { _ = try ODataPayload.decodeEntitySet(input) } catch {
                    rejected += 1
                    #expect([.malformedJSON, .malformedPayload].contains(error), "\(error)")
                }
                do throws(ODataError) { _ = try ODataPayload.decodeEntity(input) } catch {
                    rejected += 1
                    #expect([.malformedJSON, .malformedPayload].contains(error), "\(error)")
                }
            }
        }
        #expect(rejected > 100)
        #expect(seconds < Self.budget)
    }

    @Test(arguments: [UInt64(0x5EED_0201)])
    func serviceErrorBodies(seed: UInt64) {
        var formats: Set<ODataServiceError.Format> = []
        let seconds = fuzzLoop("ODataServiceError.parse", seed: seed, iterations: 3_000) { factory, _ in
            let body = factory.errorBody()
            let valid = ODataServiceError.parse(Data(body), statusCode: 400)
            #expect(valid.format != .text && valid.format != .empty, "a valid error body is recognised: \(String(decoding: body, as: UTF8.self))")
            let mutated = ODataServiceError.parse(Data(factory.mutate(body)), statusCode: 500)
            formats.insert(mutated.format)
            #expect(mutated.statusCode == 500)
            if mutated.format == .text || mutated.format == .empty { #expect(!mutated.message.isEmpty) }
        }
        #expect(formats.contains(.text), "mutations must also produce unrecognisable bodies")
        #expect(seconds < Self.budget)
    }

    static let batchCodes: Set<ODataError> = [.malformedBatch, .malformedHTTPMessage, .invalidQueryOption, .invalidURL]

    @Test(arguments: [UInt64(0x5EED_0301)])
    func multipartRequests(seed: UInt64) throws {
        var rejected = 0
        let seconds = try fuzzLoop("MultipartBatch.decodeRequest", seed: seed, iterations: 1_000) { factory, index in
            let batch = factory.batchRequest()
            let (body, contentType) = try MultipartBatch.encode(batch, boundary: "batch_\(index)")
            let decoded = try MultipartBatch.decodeRequest(body, contentType: contentType)
            #expect(decoded.allRequests.map(\.method) == batch.allRequests.map(\.method))
            #expect(decoded.allRequests.map(\.resourcePath) == batch.allRequests.map(\.resourcePath))
            let (mutatedBody, mutatedType) = Self.multipartGames(&factory, body: Array(body), contentType: contentType, boundary: "batch_\(index)")
            do throws(ODataError) { _ = try MultipartBatch.decodeRequest(Data(mutatedBody), contentType: mutatedType) } catch {
                rejected += 1
                #expect(Self.batchCodes.contains(error), "\(error)")
            }
        }
        #expect(rejected > 100)
        #expect(seconds < Self.budget)
    }

    @Test(arguments: [UInt64(0x5EED_0401)])
    func multipartResponses(seed: UInt64) throws {
        var rejected = 0
        let seconds = try fuzzLoop("MultipartBatch.decodeResponse", seed: seed, iterations: 1_000) { factory, index in
            let response = factory.batchResponse()
            let (body, contentType) = MultipartBatch.encode(response, boundary: "batchresponse_\(index)")
            let decoded = try MultipartBatch.decodeResponse(body, contentType: contentType)
            #expect(decoded.allResponses.map(\.statusCode) == response.allResponses.map(\.statusCode))
            #expect(decoded.allResponses.map(\.payload) == response.allResponses.map(\.payload))
            let (mutatedBody, mutatedType) = Self.multipartGames(&factory, body: Array(body), contentType: contentType, boundary: "batchresponse_\(index)")
            do throws(ODataError) { _ = try MultipartBatch.decodeResponse(Data(mutatedBody), contentType: mutatedType) } catch {
                rejected += 1
                #expect(Self.batchCodes.contains(error), "\(error)")
            }
        }
        #expect(rejected > 100)
        #expect(seconds < Self.budget)
    }

    /// Byte mutations plus multipart-specific games: bad boundary parameters, boundaries inside
    /// bodies, a change set nested in a change set, huge header lines, missing close delimiters.
    static func multipartGames(_ factory: inout InputFactory, body: [UInt8], contentType: String, boundary: String) -> ([UInt8], String) {
        var bytes = body
        var type = contentType
        switch factory.random.int(0..<8) {
        case 0:
            type = factory.random.pick(["multipart/mixed", "multipart/mixed; boundary=", "multipart/mixed; boundary=\"\"", "multipart/mixed; boundary=\"",
                                        "multipart/mixed; boundary=" + String(repeating: "b", count: 71), "application/json", "",
                                        "multipart/mixed; boundary=\(boundary.prefix(3))", "MULTIPART/MIXED; BOUNDARY=\(boundary)", "multipart/mixed;;;=;boundary"])
        case 1:
            let nested = "--\(boundary)\r\nContent-Type: multipart/mixed; boundary=outer_cs\r\n\r\n--outer_cs\r\nContent-Type: multipart/mixed; boundary=inner_cs\r\n\r\n--inner_cs\r\nContent-Type: application/http\r\n\r\nGET Products HTTP/1.1\r\n\r\n--inner_cs--\r\n--outer_cs--\r\n"
            bytes.insert(contentsOf: Array(nested.utf8), at: 0)
        case 2:
            let huge = "X-Huge: " + String(repeating: "h", count: factory.random.int(1_000..<100_000)) + "\r\n"
            if let at = Self.find(Array("\r\n\r\n".utf8), in: bytes) { bytes.insert(contentsOf: Array(huge.utf8), at: at + 2) }
        case 3:
            bytes = Array(bytes.prefix(factory.random.int(0..<bytes.count + 1)))
        case 4:
            let delimiter = Array("\r\n--\(boundary)".utf8)
            bytes.insert(contentsOf: delimiter, at: factory.random.int(0..<bytes.count + 1))
        case 5:
            bytes = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n").utf8)
        case 6:
            bytes = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "--\(boundary)--", with: "").utf8)
        default:
            bytes = factory.mutate(bytes)
        }
        if factory.random.chance(0.3) { bytes = factory.mutate(bytes) }
        return (bytes, type)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) { return start }
        return nil
    }

    @Test(arguments: [UInt64(0x5EED_0501)])
    func jsonBatches(seed: UInt64) throws {
        var rejected = 0
        let seconds = try fuzzLoop("JSONBatch", seed: seed, iterations: 2_000) { factory, _ in
            let batch = factory.batchRequest()
            let body = try JSONBatch.encode(batch)
            let decoded = try JSONBatch.decodeRequest(body)
            #expect(decoded.allRequests.map(\.method) == batch.allRequests.map(\.method))
            let response = factory.batchResponse()
            let responseBody = JSONBatch.encode(response)
            let decodedResponse = try JSONBatch.decodeResponse(responseBody)
            #expect(decodedResponse.allResponses.map(\.statusCode) == response.allResponses.map(\.statusCode))
            do throws(ODataError) { _ = try JSONBatch.decodeRequest(Data(factory.mutate(Array(body)))) } catch {
                rejected += 1
                #expect(Self.batchCodes.union([.malformedJSON, .malformedPayload]).contains(error), "\(error)")
            }
            do throws(ODataError) { _ = try JSONBatch.decodeResponse(Data(factory.mutate(Array(responseBody)))) } catch {
                rejected += 1
                #expect(Self.batchCodes.union([.malformedJSON, .malformedPayload]).contains(error), "\(error)")
            }
        }
        #expect(rejected > 100)
        #expect(seconds < Self.budget)
    }

    @Test(arguments: [UInt64(0x5EED_0601)])
    func headerBlocks(seed: UInt64) {
        var rejected = 0
        let seconds = fuzzLoop("MultipartBatch.parseHeaders", seed: seed, iterations: 5_000) { factory, _ in
            var text = ""
            for _ in 0..<factory.random.int(0..<6) {
                text += factory.random.pick(["Content-Type", "Content-ID", "ETag", "X-A", "If-Match"]) + ": " + factory.string() + "\r\n"
            }
            text += "\r\nbody"
            let valid = Array(text.utf8)
            do throws(ODataError) { _ = try MultipartBatch.parseHeaders(valid, from: 0, end: valid.count, what: "fuzz") } catch {
                // Generated values may hold a NUL or tab-only strings; those must be rejected, typed.
                #expect(error == .malformedHTTPMessage)
            }
            let mutated = factory.mutate(valid)
            let end = factory.random.chance(0.2) ? factory.random.int(0..<mutated.count + 1) : mutated.count
            do throws(ODataError) {
                let (_, bodyStart) = try MultipartBatch.parseHeaders(mutated, from: 0, end: end, what: "fuzz")
                #expect(bodyStart <= mutated.count)
            } catch {
                rejected += 1
                #expect(error == .malformedHTTPMessage, "\(error)")
            }
        }
        #expect(rejected > 100)
        #expect(seconds < Self.budget)
    }
}
