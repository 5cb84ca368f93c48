package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// Box encrypts and decrypts hmac_secrets with AES-256-GCM. New secrets use the
// first (primary) key; older keys stay readable so keys can be rotated.
type Box struct {
	primary string
	aeads   map[string]cipher.AEAD
}

// Key is one AES-256 key, and the id stored beside every secret it sealed.
type Key struct {
	ID  string
	Key []byte // 32 bytes
}

// NewBox builds a Box that opens secrets sealed with any of keys and seals
// new ones with the first (the primary).
func NewBox(keys []Key) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("secrets: at least one key is required")
	}
	b := &Box{primary: keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for _, k := range keys {
		block, err := aes.NewCipher(k.Key)
		if err != nil {
			return nil, fmt.Errorf("secret key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secret key %q: %w", k.ID, err)
		}
		b.aeads[k.ID] = aead
	}
	return b, nil
}

// PrimaryKeyID is the id of the key new secrets are sealed with.
func (b *Box) PrimaryKeyID() string { return b.primary }

// Seal encrypts plaintext, binding it to aad (the owning record's id) so a
// ciphertext copied onto another record does not decrypt.
func (b *Box) Seal(plaintext, aad string) (keyID string, ciphertext []byte) {
	aead := b.aeads[b.primary]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return b.primary, aead.Seal(nonce, nonce, []byte(plaintext), []byte(aad))
}

// Open decrypts a ciphertext sealed by Seal with the key keyID.
func (b *Box) Open(keyID string, ciphertext []byte, aad string) (string, error) {
	aead, ok := b.aeads[keyID]
	if !ok {
		return "", fmt.Errorf("open secret: unknown key id %q", keyID)
	}
	if len(ciphertext) < aead.NonceSize() {
		return "", errors.New("open secret: ciphertext too short")
	}
	nonce, sealed := ciphertext[:aead.NonceSize()], ciphertext[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, sealed, []byte(aad))
	if err != nil {
		return "", fmt.Errorf("open secret with key %q: %w", keyID, err)
	}
	return string(plain), nil
}
