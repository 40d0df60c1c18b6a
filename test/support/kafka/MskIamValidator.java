import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerExtensionsValidatorCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallback;

/**
 * The tests' stand-in for Amazon MSK's IAM check, on the test broker's SASL_SSL listener: it takes
 * an OAUTHBEARER token as MSK does (the base64url of a SigV4-presigned
 * https://kafka.<region>.amazonaws.com/?Action=kafka-cluster:Connect request) and verifies its
 * signature with the one access key it is configured with (JAAS options accessKeyId, secretKey,
 * region; and a role's temporary key with its session token: roleAccessKeyId, roleSecretKey,
 * roleSessionToken), its action, region and expiry. MSK itself cannot run here; this checks what a client
 * sends it, independently of the client's code.
 */
public class MskIamValidator implements AuthenticateCallbackHandler {
  private static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);
  private String accessKeyId;
  private String secretKey;
  private String region;
  private String roleAccessKeyId;
  private String roleSecretKey;
  private String roleSessionToken;

  @Override
  public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
    Map<String, ?> options = entries.get(0).getOptions();
    accessKeyId = (String) options.get("accessKeyId");
    secretKey = (String) options.get("secretKey");
    region = (String) options.get("region");
    roleAccessKeyId = (String) options.get("roleAccessKeyId");
    roleSecretKey = (String) options.get("roleSecretKey");
    roleSessionToken = (String) options.get("roleSessionToken");
  }

  @Override
  public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
    for (Callback callback : callbacks) {
      if (callback instanceof OAuthBearerValidatorCallback validator) {
        String problem = problem(validator.tokenValue(), accessKeyId, secretKey, null, region, Instant.now());
        if (problem != null && roleAccessKeyId != null) {
          // A role's temporary key: signed by it, and carrying its session token.
          String asRole = problem(validator.tokenValue(), roleAccessKeyId, roleSecretKey, roleSessionToken, region, Instant.now());
          if (asRole == null) problem = null;
        }
        if (problem == null) validator.token(token(validator.tokenValue()));
        else validator.error("invalid_token", null, null);
        if (problem != null) System.err.println("MskIamValidator refused a token: " + problem);
      } else if (callback instanceof OAuthBearerExtensionsValidatorCallback extensions) {
        extensions.inputExtensions().map().keySet().forEach(extensions::valid);
      } else {
        throw new UnsupportedCallbackException(callback);
      }
    }
  }

  @Override
  public void close() {}

  /** Why the token is not a valid MSK IAM token for the key, or null when it is. */
  static String problem(String token, String accessKeyId, String secretKey, String sessionToken, String region, Instant now) {
    try {
      String url = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
      String host = "kafka." + region + ".amazonaws.com";
      String prefix = "https://" + host + "/?";
      if (!url.startsWith(prefix)) return "not a presigned request to " + host;
      Map<String, String> query = new TreeMap<>();
      for (String pair : url.substring(prefix.length()).split("&")) {
        String[] kv = pair.split("=", 2);
        query.put(decode(kv[0]), kv.length > 1 ? decode(kv[1]) : "");
      }
      if (!"kafka-cluster:Connect".equals(query.get("Action"))) return "Action is not kafka-cluster:Connect";
      String date = query.get("X-Amz-Date");
      String scope = date.substring(0, 8) + "/" + region + "/kafka-cluster/aws4_request";
      if (!(accessKeyId + "/" + scope).equals(query.get("X-Amz-Credential"))) return "signed by another key or for another region";
      Instant signed = AMZ_DATE.parse(date, Instant::from);
      long expires = Long.parseLong(query.get("X-Amz-Expires"));
      if (now.isAfter(signed.plusSeconds(expires)) || now.isBefore(signed.minusSeconds(300))) return "expired or not yet valid";
      if (sessionToken != null && !sessionToken.equals(query.get("X-Amz-Security-Token"))) return "without the role's session token";
      String signature = query.remove("X-Amz-Signature");
      query.remove("User-Agent");
      StringBuilder canonicalQuery = new StringBuilder();
      for (Map.Entry<String, String> entry : query.entrySet()) {
        if (canonicalQuery.length() > 0) canonicalQuery.append('&');
        canonicalQuery.append(encode(entry.getKey())).append('=').append(encode(entry.getValue()));
      }
      String canonicalRequest = String.join("\n", "GET", "/", canonicalQuery, "host:" + host, "", "host", hex(sha256(new byte[0])));
      String toSign = String.join("\n", "AWS4-HMAC-SHA256", date, scope, hex(sha256(canonicalRequest.getBytes(StandardCharsets.UTF_8))));
      byte[] key = ("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8);
      for (String part : new String[] {date.substring(0, 8), region, "kafka-cluster", "aws4_request"}) key = hmac(key, part);
      if (!hex(hmac(key, toSign)).equals(signature)) return "the signature does not match";
      return null;
    } catch (Exception e) {
      return "unreadable token: " + e;
    }
  }

  private static OAuthBearerToken token(String value) {
    long now = System.currentTimeMillis();
    return new OAuthBearerToken() {
      public String value() { return value; }
      public Set<String> scope() { return Set.of(); }
      public long lifetimeMs() { return now + 900_000; }
      public String principalName() { return "msk-iam-user"; }
      public Long startTimeMs() { return now; }
    };
  }

  private static String decode(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }

  /** SigV4's URI encoding: unreserved characters as they are, everything else %XX. */
  private static String encode(String s) {
    StringBuilder out = new StringBuilder();
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~') out.append(c);
      else out.append(String.format("%%%02X", b & 0xff));
    }
    return out.toString();
  }

  private static byte[] sha256(byte[] data) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(data);
  }

  private static byte[] hmac(byte[] key, String data) throws Exception {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
  }

  private static String hex(byte[] bytes) {
    StringBuilder out = new StringBuilder();
    for (byte b : bytes) out.append(String.format("%02x", b));
    return out.toString();
  }

  /** Checks one token from the command line: java -cp '<lib>/*' MskIamValidator.java token key secret region [sessionToken] */
  public static void main(String[] args) {
    String problem = problem(args[0], args[1], args[2], args.length > 4 ? args[4] : null, args[3], Instant.now());
    System.out.println(problem == null ? "valid" : problem);
  }
}
