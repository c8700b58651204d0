import ODataCore

/// The typed layer's errors are ``ODataError``s: a payload that does not fit a generated type
/// (`.typeMismatch`, `.malformedPayload`, naming the type, the property and what was found), a query that
/// cannot be written for the service's OData version (`.invalidQuery`), a read that had nothing to answer with
/// (`.noData`), an entity that cannot be addressed (`.invalidEntity`). Errors of the store underneath
/// (``ODataServiceError``, the offline store's errors, transport errors) pass through unchanged.
///
/// Generated proxies and the typed API name it `DataServiceError`; `catch DataServiceError.typeMismatch` and
/// `catch ODataError.typeMismatch` are the same pattern.
public typealias DataServiceError = ODataError
