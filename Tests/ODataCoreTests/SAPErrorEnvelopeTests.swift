import Foundation
import ODataCore
import Testing

/// The error body SAP Gateway sends (as mock-sap writes it): a V2 message object, and the messages in
/// `innererror.errordetails`.
@Suite struct SAPErrorEnvelopeTests {
    @Test func errordetailsBecomeTheDetails() {
        let body = Data(#"""
        {"error":{"code":"/IWBEP/CX_MGW_BUSI_EXCEPTION","message":{"lang":"en","value":"Product HT-1 exists already"},
         "innererror":{"transactionid":"MOCK0","errordetails":[
           {"code":"/IWBEP/CX_MGW_BUSI_EXCEPTION","message":"Product HT-1 exists already","propertyref":"ProductID","severity":"error","target":"ProductID"},
           {"code":"MSG/002","message":"second","severity":"warning","target":""}]}}}
        """#.utf8)
        let error = ODataServiceError.parse(body, statusCode: 400)
        #expect(error.format == .v2JSON)
        #expect(error.code == "/IWBEP/CX_MGW_BUSI_EXCEPTION" && error.message == "Product HT-1 exists already")
        #expect(error.details.map(\.code) == ["/IWBEP/CX_MGW_BUSI_EXCEPTION", "MSG/002"])
        #expect(error.details.first?.target == "ProductID")
        #expect(error.innerError?["transactionid"]?.stringValue == "MOCK0")
    }

    @Test func anInnerErrorWithoutDetailsGivesNone() {
        let body = Data(#"{"error":{"code":"X","message":{"value":"m"},"innererror":{"errordetails":"not an array"}}}"#.utf8)
        #expect(ODataServiceError.parse(body, statusCode: 500).details.isEmpty)
    }
}
